// Overview: this agent, the Raft configuration and the leader, and autopilot's health. None of these endpoints has a
// blocking query (/v1/agent/self, /v1/operator/raft/configuration, /v1/operator/autopilot/health, /v1/status/leader),
// so the page reads them together every few seconds while the tab is visible.
// Its actions, each behind an in-page confirmation and needing operator:write (asked of
// /v1/internal/acl/authorize; a token without it sees them disabled): make a server leave (PUT /v1/conclave/leave,
// which this agent passes to that server over the server port) and hand leadership over
// (POST /v1/operator/raft/transfer-leader).

import {authorize, call, getJson, poll} from '../api.js';
import {allowOnly, badge, el, errorBox, facts, replace, table} from '../dom.js';

/** The right both actions need. */
const OPERATOR_WRITE = 'operator:write';

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

/**
 * An in-page confirmation in the actions area (never window.confirm: the page opens no dialog), kept outside the part
 * the poll redraws; on yes, runs act() and shows its outcome there.
 */
function confirmAction(area, question, label, act) {
  const yes = el('button', {type: 'button', class: 'danger', id: 'action-confirm'}, label);
  const no = el('button', {type: 'button', class: 'secondary', id: 'action-cancel'}, 'Cancel');
  no.addEventListener('click', () => replace(area));
  yes.addEventListener('click', async () => {
    yes.disabled = true;
    try {
      replace(area, el('p', {id: 'action-outcome', role: 'status'}, await act()));
    } catch (error) {
      replace(area, el('div', {id: 'action-outcome'}, errorBox(error)));
    }
  });
  replace(area, el('div', {class: 'confirm', role: 'alertdialog', 'aria-label': question}, el('p', {}, question), yes, ' ', no));
  yes.focus();
}

function leaveButton(server, area, mayOperate) {
  const button = el('button', {type: 'button', class: 'danger small', id: `leave-${server.Node}`,
    'aria-label': `Make ${server.Node} leave the cluster`}, 'Make leave…');
  button.addEventListener('click', () => confirmAction(area,
      `Make ${server.Node} leave the cluster? It leaves as 'conclave leave' on it would: `
      + (server.Leader ? 'it leads, so it hands leadership to another voter first (one election); ' : '')
      + 'it is removed from the Raft configuration and its agent stops.',
      `Make ${server.Node} leave`, async () => {
        const answer = JSON.parse((await call('PUT', `/v1/conclave/leave?id=${encodeURIComponent(server.ID)}`)).text);
        return `${answer.Node} is leaving. The overview and the timeline show the hand-over as it happens.`;
      }));
  return allowOnly(button, mayOperate, OPERATOR_WRITE);
}

function serversSection(configuration, area, mayOperate) {
  const heading = el('h2', {id: 'servers-heading'}, 'Raft servers');
  if (configuration.error) {
    return el('section', {}, heading, errorBox(configuration.error));
  }
  const servers = configuration.Servers || [];
  const rows = servers.map(server => [
    server.Node,
    server.Address,
    server.Leader ? badge('leader') : '',
    server.Voter ? 'voter' : 'non-voter',
    leaveButton(server, area, mayOperate),
  ]);
  const transfer = el('button', {type: 'button', class: 'secondary', id: 'transfer-leader'}, 'Transfer leadership…');
  transfer.addEventListener('click', () => confirmAction(area,
      'Hand leadership to the most up-to-date other voter? One election, with no time-out.', 'Transfer leadership', async () => {
        await call('POST', '/v1/operator/raft/transfer-leader');
        return 'Leadership is being handed over.';
      }));
  allowOnly(transfer, mayOperate, OPERATOR_WRITE);
  if (servers.filter(server => server.Voter).length < 2) {
    transfer.disabled = true; // nobody to hand it to
  }
  return el('section', {'aria-labelledby': 'servers-heading', id: 'servers'}, heading,
      table(null, ['Node', 'Address', 'Leader', 'Vote', 'Action'], rows, 'No servers.'), el('p', {}, transfer));
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
  const area = el('div', {id: 'overview-action', 'aria-live': 'polite'}); // not redrawn by the poll
  main.append(el('h1', {}, 'Overview'), area, body);
  // the token's right first, so that no action is offered before the page knows; null (not known): the actions stay
  // on, and a refusal shows its 403
  authorize([{Resource: 'operator', Access: 'write'}], signal).then(allowed => {
    const mayOperate = allowed ? allowed[0] : null;
    if (signal.aborted) {
      return;
    }
    poll(read, signal, data => {
      body.removeAttribute('aria-busy');
      const parts = [agentSection(data.self, data.leader)];
      if (data.self.Config && data.self.Config.Server) {
        parts.push(serversSection(data.configuration, area, mayOperate), healthSection(data.health));
      }
      replace(body, parts);
    }, error => replace(body, errorBox(error)));
  });
}
