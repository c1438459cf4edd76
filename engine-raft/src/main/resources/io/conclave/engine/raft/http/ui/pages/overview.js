// Overview: this agent, the Raft configuration and the leader, and autopilot's health. None of these endpoints has a
// blocking query (/v1/agent/self, /v1/operator/raft/configuration, /v1/operator/autopilot/health, /v1/status/leader),
// so the page reads them together every few seconds while the tab is visible.

import {call, getJson, poll} from '../api.js';
import {badge, el, errorBox, facts, replace, table} from '../dom.js';

async function read() {
  const [self, configuration, health, leader] = await Promise.all([
    getJson('/v1/agent/self'),
    getJson('/v1/operator/raft/configuration').catch(error => ({error})),
    call('GET', '/v1/operator/autopilot/health', {accept: [429]}).then(answer => JSON.parse(answer.text)).catch(error => ({error})),
    getJson('/v1/status/leader').catch(() => ''),
  ]);
  return {self, configuration, health, leader};
}

function raftStats(self) {
  return (self.Stats && self.Stats.raft) || null;
}

function agentSection(self, leader) {
  const config = self.Config || {};
  const raft = raftStats(self);
  const pairs = [
    ['Datacenter', config.Datacenter],
    ['Node', config.NodeName],
    ['Role', config.Server ? 'server' : 'client'],
    ['Version', config.Version],
    ['Leader', leader ? el('span', {id: 'leader-address'}, leader) : el('span', {id: 'leader-address', class: 'warn'}, 'no leader')],
  ];
  if (self.Stats && self.Stats.consul && self.Stats.consul.known_servers !== undefined) {
    pairs.push(['Known servers', self.Stats.consul.known_servers]); // a client agent: the servers it forwards to
  }
  if (raft) {
    pairs.push(['Raft state', el('span', {id: 'raft-state'}, raft.state)],
        ['Term', el('span', {id: 'raft-term'}, raft.term)],
        ['Commit index', raft.commit_index],
        ['Applied index', raft.applied_index],
        ['Last contact', raft.last_contact],
        ['Removal policy', raft.removal_policy]);
  }
  return el('section', {'aria-labelledby': 'agent-heading'}, el('h2', {id: 'agent-heading'}, 'This agent'), facts(pairs));
}

function serversSection(configuration) {
  const heading = el('h2', {id: 'servers-heading'}, 'Raft servers');
  if (configuration.error) {
    return el('section', {}, heading, errorBox(configuration.error));
  }
  const rows = (configuration.Servers || []).map(server => [
    server.Node,
    server.Address,
    server.Leader ? badge('leader') : '',
    server.Voter ? 'voter' : 'non-voter',
  ]);
  return el('section', {'aria-labelledby': 'servers-heading', id: 'servers'}, heading,
      table(null, ['Node', 'Address', 'Leader', 'Vote'], rows, 'No servers.'));
}

function healthSection(health) {
  const heading = el('h2', {id: 'health-heading'}, 'Autopilot');
  if (health.error) {
    return el('section', {}, heading, errorBox(health.error));
  }
  const rows = (health.Servers || []).map(server => [
    server.Name,
    server.Address,
    server.Healthy ? badge('passing', 'healthy') : badge('critical', 'unhealthy'),
    server.SerfStatus,
    server.Voter ? 'voter' : 'non-voter',
    server.LastContact,
    String(server.LastTerm),
    String(server.LastIndex),
    server.StableSince,
  ]);
  return el('section', {'aria-labelledby': 'health-heading'}, heading,
      facts([
        ['Healthy', health.Healthy ? badge('passing', 'yes') : badge('critical', 'no')],
        ['Failure tolerance', String(health.FailureTolerance)],
      ]),
      table(null, ['Server', 'Address', 'Health', 'Gossip', 'Vote', 'Last contact', 'Last term', 'Last index', 'Stable since'],
          rows, 'No servers.'));
}

export function render(main, rest, signal) {
  const body = el('div', {'aria-busy': 'true'}, el('p', {}, 'Loading…'));
  main.append(el('h1', {}, 'Overview'), body);
  poll(read, signal, data => {
    body.removeAttribute('aria-busy');
    const parts = [agentSection(data.self, data.leader)];
    if (data.self.Config && data.self.Config.Server) {
      parts.push(serversSection(data.configuration), healthSection(data.health));
    }
    replace(body, parts);
  }, error => replace(body, errorBox(error)));
}
