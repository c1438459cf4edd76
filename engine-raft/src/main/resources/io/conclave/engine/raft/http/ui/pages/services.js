// Services: the catalog's services (/v1/catalog/services) with their checks' states (/v1/health/state/any), both
// with blocking queries; one service (#/services/<name>) lists its instances and their checks from
// /v1/health/service/<name>, a blocking query too.

import {watch} from '../api.js';
import {badge, el, errorBox, replace, table} from '../dom.js';

/** The worst of a list of check states. */
export function worst(states) {
  if (states.includes('critical')) {
    return 'critical';
  }
  if (states.includes('warning')) {
    return 'warning';
  }
  return states.length ? 'passing' : 'none';
}

function summary(counts) {
  if (!counts) {
    return badge('none', 'no checks');
  }
  return el('span', {}, ['passing', 'warning', 'critical'].filter(state => counts[state])
      .map(state => [badge(state, `${counts[state]} ${state}`), ' ']));
}

function renderList(main, signal) {
  const body = el('div', {id: 'services'}, el('p', {}, 'Loading…'));
  main.append(el('h1', {}, 'Services'), body);
  let services = null;
  let checks = [];
  const draw = () => {
    if (!services) {
      return;
    }
    const byService = {};
    for (const check of checks) {
      if (check.ServiceName) {
        const counts = byService[check.ServiceName] || (byService[check.ServiceName] = {});
        counts[check.Status] = (counts[check.Status] || 0) + 1;
      }
    }
    const rows = Object.keys(services).sort().map(name => [
      el('a', {href: '#/services/' + encodeURIComponent(name)}, name),
      summary(byService[name]),
      el('span', {class: 'tags'}, (services[name] || []).map(tag => el('code', {}, tag))),
    ]);
    replace(body, table(null, ['Service', 'Health', 'Tags'], rows, 'No services.'));
  };
  watch('/v1/catalog/services', signal, data => {
    services = data || {};
    draw();
  }, error => replace(body, errorBox(error)));
  watch('/v1/health/state/any', signal, data => {
    checks = data || [];
    draw();
  }, () => {});
}

function renderService(main, name, signal) {
  const body = el('div', {id: 'service-instances'}, el('p', {}, 'Loading…'));
  main.append(el('h1', {}, 'Services'), el('nav', {class: 'crumbs'}, el('a', {href: '#/services'}, 'All services')),
      el('h2', {}, name), body);
  watch('/v1/health/service/' + encodeURIComponent(name), signal, entries => {
    const rows = (entries || []).map(entry => {
      const service = entry.Service || {};
      const node = entry.Node || {};
      const states = (entry.Checks || []).map(check => check.Status);
      return [
        service.ID,
        el('a', {href: '#/nodes/' + encodeURIComponent(node.Node)}, node.Node),
        `${service.Address || node.Address}:${service.Port}`,
        badge(worst(states)),
        el('ul', {class: 'checks'}, (entry.Checks || []).map(check => el('li', {}, badge(check.Status), ' ', check.Name,
            check.Output ? el('span', {class: 'muted'}, ' — ', check.Output) : null))),
        el('span', {class: 'tags'}, (service.Tags || []).map(tag => el('code', {}, tag))),
      ];
    });
    replace(body, table(null, ['Instance', 'Node', 'Address', 'Health', 'Checks', 'Tags'], rows, 'No instances.'));
  }, error => replace(body, errorBox(error)));
}

export function render(main, rest, signal) {
  if (rest) {
    let name = rest;
    try {
      name = decodeURIComponent(rest);
    } catch (e) {
      // as written
    }
    renderService(main, name, signal);
  } else {
    renderList(main, signal);
  }
}
