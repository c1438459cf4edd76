// Nodes: the catalog's nodes (/v1/catalog/nodes) with their checks' states (/v1/health/state/any), both with
// blocking queries; one node (#/nodes/<name>) shows its services (/v1/catalog/node/<name>) and checks
// (/v1/health/node/<name>).

import {watch} from '../api.js';
import {badge, el, errorBox, facts, replace, table} from '../dom.js';
import {worst} from './services.js';

function renderList(main, signal) {
  const body = el('div', {id: 'nodes'}, el('p', {}, 'Loading…'));
  main.append(el('h1', {}, 'Nodes'), body);
  let nodes = null;
  let checks = [];
  const draw = () => {
    if (!nodes) {
      return;
    }
    const states = {};
    for (const check of checks) {
      (states[check.Node] || (states[check.Node] = [])).push(check.Status);
    }
    const rows = nodes.slice().sort((a, b) => a.Node.localeCompare(b.Node)).map(node => [
      el('a', {href: '#/nodes/' + encodeURIComponent(node.Node)}, node.Node),
      node.Address,
      node.Datacenter || '',
      badge(worst(states[node.Node] || [])),
    ]);
    replace(body, table(null, ['Node', 'Address', 'Datacenter', 'Health'], rows, 'No nodes.'));
  };
  watch('/v1/catalog/nodes', signal, data => {
    nodes = data || [];
    draw();
  }, error => replace(body, errorBox(error)));
  watch('/v1/health/state/any', signal, data => {
    checks = data || [];
    draw();
  }, () => {});
}

function renderNode(main, name, signal) {
  const summary = el('div', {}, el('p', {}, 'Loading…'));
  const checkList = el('div', {});
  main.append(el('h1', {}, 'Nodes'), el('nav', {class: 'crumbs'}, el('a', {href: '#/nodes'}, 'All nodes')), el('h2', {}, name),
      summary, el('h3', {}, 'Checks'), checkList);
  const path = encodeURIComponent(name);
  watch('/v1/catalog/node/' + path, signal, data => {
    if (!data || !data.Node) {
      replace(summary, el('p', {class: 'warn'}, 'This node is not in the catalog.'));
      return;
    }
    const services = Object.values(data.Services || {}).map(service => [
      el('a', {href: '#/services/' + encodeURIComponent(service.Service)}, service.Service),
      service.ID,
      `${service.Address || data.Node.Address}:${service.Port}`,
      el('span', {class: 'tags'}, (service.Tags || []).map(tag => el('code', {}, tag))),
    ]);
    replace(summary, facts([['Address', data.Node.Address], ['Datacenter', data.Node.Datacenter || '']]),
        el('h3', {}, 'Services'), table(null, ['Service', 'Instance', 'Address', 'Tags'], services, 'No services.'));
  }, error => replace(summary, errorBox(error)));
  watch('/v1/health/node/' + path, signal, checks => {
    const rows = (checks || []).map(check => [badge(check.Status), check.Name, check.ServiceName || '', check.Output || '']);
    replace(checkList, table(null, ['Status', 'Check', 'Service', 'Output'], rows, 'No checks.'));
  }, error => replace(checkList, errorBox(error)));
}

export function render(main, rest, signal) {
  if (rest) {
    let name = rest;
    try {
      name = decodeURIComponent(rest);
    } catch (e) {
      // as written
    }
    renderNode(main, name, signal);
  } else {
    renderList(main, signal);
  }
}
