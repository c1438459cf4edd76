// Members: gossip's view (/v1/agent/members), which has no blocking query: read every few seconds.

import {getJson, poll} from '../api.js';
import {badge, el, errorBox, replace, table} from '../dom.js';

/** Consul's member status codes. */
const STATUS = {0: 'none', 1: 'alive', 2: 'leaving', 3: 'left', 4: 'failed'};
const STATUS_BADGE = {alive: 'passing', leaving: 'warning', left: 'warning', failed: 'critical', none: 'warning'};

export function render(main, rest, signal) {
  const body = el('div', {}, el('p', {}, 'Loading…'));
  main.append(el('h1', {}, 'Members'), body);
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
