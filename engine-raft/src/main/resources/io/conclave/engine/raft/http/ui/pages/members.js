// Members: gossip's view (/v1/agent/members), which has no blocking query: read every few seconds. Above it, for a
// token with keyring:read (asked of /v1/internal/acl/authorize), the primary gossip key's fingerprint from
// /v1/conclave/keyring: a short hash, never the key.

import {authorize, getJson, poll} from '../api.js';
import {badge, el, errorBox, replace, table} from '../dom.js';

/** Consul's member status codes. */
const STATUS = {0: 'none', 1: 'alive', 2: 'leaving', 3: 'left', 4: 'failed'};
const STATUS_BADGE = {alive: 'passing', leaving: 'warning', left: 'warning', failed: 'critical', none: 'warning'};

/** The primary key's fingerprint, once per page: the keyring is asked of every member, so it is not polled. */
async function showFingerprint(line, signal) {
  const allowed = await authorize([{Resource: 'keyring', Access: 'read'}], signal);
  if (allowed && !allowed[0]) {
    replace(line, 'The gossip key\'s fingerprint is shown to a token with keyring:read.');
    return;
  }
  try {
    const keyring = await getJson('/v1/conclave/keyring', {signal});
    if (!keyring.Encrypted) {
      replace(line, el('span', {class: 'warn'}, 'Gossip is not encrypted (no encrypt key).'));
      return;
    }
    const primary = Object.entries(keyring.PrimaryKeys || {}).map(([fingerprint, members]) =>
      [el('code', {}, fingerprint), ` (${members} of ${keyring.NumNodes} members)`]);
    replace(line, primary.length > 1 ? 'Primary gossip keys, while a rotation is under way: ' : 'Primary gossip key: ',
        primary.map((part, position) => [position ? ', ' : '', part]));
  } catch (error) {
    if (!signal.aborted) {
      replace(line, errorBox(error));
    }
  }
}

export function render(main, rest, signal) {
  const fingerprint = el('p', {id: 'keyring-fingerprint', class: 'muted'});
  const body = el('div', {}, el('p', {}, 'Loading…'));
  main.append(el('h1', {}, 'Members'), fingerprint, body);
  showFingerprint(fingerprint, signal);
  poll(() => getJson('/v1/agent/members'), signal, members => {
    const rows = (members || []).slice().sort((a, b) => a.Name.localeCompare(b.Name)).map(member => {
      const status = STATUS[member.Status] || String(member.Status);
      const tags = member.Tags || {};
      return [
        member.Name,
        `${member.Addr}:${member.Port}`,
        badge(STATUS_BADGE[status] || 'warning', status),
        tags.role === 'server' || tags.role === 'consul' ? 'server' : 'client',
        tags.dc || '',
        el('span', {class: 'tags'}, Object.entries(tags).sort().map(([name, value]) => el('code', {}, `${name}=${value}`))),
      ];
    });
    replace(body, table(null, ['Name', 'Address', 'Status', 'Role', 'Datacenter', 'Tags'], rows, 'No members.'));
  }, error => replace(body, errorBox(error)));
}
