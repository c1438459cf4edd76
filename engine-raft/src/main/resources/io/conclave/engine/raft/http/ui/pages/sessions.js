// Sessions: /v1/session/list with a blocking query; a session can be destroyed (its locks released) after a
// confirmation.

import {call, watch} from '../api.js';
import {el, errorBox, replace, table} from '../dom.js';

export function render(main, rest, signal) {
  const body = el('div', {id: 'sessions'}, el('p', {}, 'Loading…'));
  const outcome = el('p', {role: 'status'});
  main.append(el('h1', {}, 'Sessions'), body, outcome);
  watch('/v1/session/list', signal, sessions => {
    const rows = (sessions || []).map(session => {
      const destroy = el('button', {type: 'button', class: 'danger small'}, 'Destroy…');
      destroy.addEventListener('click', () => {
        const yes = el('button', {type: 'button', class: 'danger small'}, 'Destroy it');
        yes.addEventListener('click', async () => {
          try {
            await call('PUT', '/v1/session/destroy/' + encodeURIComponent(session.ID));
            replace(outcome, 'Destroyed.');
          } catch (error) {
            replace(outcome, errorBox(error));
          }
        });
        destroy.replaceWith(yes);
        yes.focus();
      });
      return [
        el('code', {}, session.ID),
        session.Name || '',
        session.Node || '',
        session.Behavior || '',
        session.TTL || '',
        String(session.LockDelay ?? ''),
        (session.NodeChecks || session.Checks || []).join(', '),
        destroy,
      ];
    });
    replace(body, table(null, ['ID', 'Name', 'Node', 'Behavior', 'TTL', 'Lock delay (ns)', 'Checks', ''], rows, 'No sessions.'));
  }, error => replace(body, errorBox(error)));
}
