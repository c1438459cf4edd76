// Timeline: this server's elections, leader and membership changes and snapshots, from /v1/conclave/timeline (a
// Conclave-only endpoint) with blocking queries: a chart of the last hour, drawn as SVG with DOM calls (no markup is
// parsed, nothing inline, so the page's Content-Security-Policy holds), and the list, newest first.

import {watch} from '../api.js';
import {el, errorBox, replace, table} from '../dom.js';

const SVG = 'http://www.w3.org/2000/svg';
/** The chart's span: the last hour, as the Timeline shows it. */
const SPAN_MS = 60 * 60 * 1000;
const WIDTH = 1000;
const LEFT = 96;
const RIGHT = 12;
const LANE_HEIGHT = 28;
/** The lanes of the chart, top to bottom, and the event types each holds. */
const LANES = [
  {name: 'Leader', types: ['leader']},
  {name: 'Elections', types: ['election-started', 'election-won']},
  {name: 'Membership', types: ['join', 'promote', 'demote', 'remove', 'leave', 'failed']},
  {name: 'Snapshots', types: ['snapshot-taken', 'snapshot-installed']},
];
const GAP_HEIGHT = 60;

function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, String(value));
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function describe(event) {
  const gap = event.WriteGapMillis === null || event.WriteGapMillis === undefined ? '' : `, write gap ${event.WriteGapMillis} ms`;
  return `${event.Time} ${event.Type} (term ${event.Term}, index ${event.Index}${gap}): ${event.Detail}`;
}

function clock(millis) {
  return new Date(millis).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
}

/** The chart of the last hour: a lane per kind of event, each a mark at its time, and the write gaps as bars below. */
function chart(events, now) {
  const start = now - SPAN_MS;
  const lanesBottom = LANES.length * LANE_HEIGHT;
  const height = lanesBottom + GAP_HEIGHT + 24;
  const x = millis => LEFT + (millis - start) / SPAN_MS * (WIDTH - LEFT - RIGHT);
  const shown = events.filter(event => event.TimeMillis >= start);
  const root = svg('svg', {viewBox: `0 0 ${WIDTH} ${height}`, class: 'timeline-chart', role: 'img',
    'aria-label': `Timeline of the last hour: ${shown.length} events`});
  LANES.forEach((lane, row) => {
    const y = row * LANE_HEIGHT;
    root.append(svg('line', {x1: LEFT, x2: WIDTH - RIGHT, y1: y + LANE_HEIGHT / 2, y2: y + LANE_HEIGHT / 2, class: 'lane'}));
    root.append(svg('text', {x: 4, y: y + LANE_HEIGHT / 2 + 4, class: 'label'}, lane.name));
  });
  const gapTop = lanesBottom + 4;
  root.append(svg('text', {x: 4, y: gapTop + GAP_HEIGHT / 2 + 4, class: 'label'}, 'Write gap'));
  root.append(svg('line', {x1: LEFT, x2: WIDTH - RIGHT, y1: gapTop + GAP_HEIGHT, y2: gapTop + GAP_HEIGHT, class: 'axis'}));
  for (let minutes = 0; minutes <= 60; minutes += 10) {
    const at = start + minutes * 60 * 1000;
    root.append(svg('line', {x1: x(at), x2: x(at), y1: 0, y2: gapTop + GAP_HEIGHT, class: 'grid'}));
    const anchor = minutes === 0 ? ' start' : minutes === 60 ? ' end' : '';
    root.append(svg('text', {x: x(at), y: height - 6, class: 'tick' + anchor}, clock(at)));
  }
  const gaps = shown.filter(event => typeof event.WriteGapMillis === 'number');
  const longest = Math.max(1, ...gaps.map(event => event.WriteGapMillis));
  for (const event of shown) {
    const row = LANES.findIndex(lane => lane.types.includes(event.Type));
    if (row < 0) {
      continue;
    }
    const mark = svg('circle', {cx: x(event.TimeMillis), cy: row * LANE_HEIGHT + LANE_HEIGHT / 2, r: 5, class: 'mark ' + event.Type},
        svg('title', {}, describe(event)));
    root.append(mark);
  }
  for (const event of gaps) {
    const barHeight = Math.max(1, event.WriteGapMillis / longest * GAP_HEIGHT);
    root.append(svg('rect', {x: x(event.TimeMillis) - 2, y: gapTop + GAP_HEIGHT - barHeight, width: 4, height: barHeight,
      class: 'gap'}, svg('title', {}, `write gap ${event.WriteGapMillis} ms around ${event.Type} at ${event.Time}`)));
  }
  root.append(svg('text', {x: WIDTH - RIGHT, y: gapTop + 10, class: 'tick end'}, `longest ${longest} ms`));
  return root;
}

export function render(main, rest, signal) {
  const figure = el('figure', {class: 'timeline'});
  const list = el('div', {id: 'timeline'}, el('p', {}, 'Loading…'));
  main.append(el('h1', {}, 'Timeline'),
      el('p', {class: 'muted'}, 'Elections, leader and membership changes and snapshots as this server saw them; the write gap is'
          + ' the interval between the commits around a change (what a writer waited).'),
      figure, list);
  watch('/v1/conclave/timeline', signal, timeline => {
    const events = (timeline && timeline.Events) || [];
    replace(figure, chart(events, Date.now()),
        el('figcaption', {class: 'muted'}, `The last hour; ${events.length} of at most ${timeline ? timeline.Capacity : 0} events kept.`));
    const rows = events.slice().reverse().map(event => [
      el('time', {datetime: event.Time}, event.Time.replace('T', ' ').replace('Z', ' UTC')),
      el('span', {class: 'event ' + event.Type}, event.Type),
      String(event.Term),
      String(event.Index),
      event.Server || '',
      typeof event.WriteGapMillis === 'number' ? `${event.WriteGapMillis} ms` : '',
      event.Detail || '',
    ]);
    replace(list, table(null, ['Time', 'Event', 'Term', 'Index', 'Server', 'Write gap', 'Detail'], rows, 'No events yet.'));
  }, error => replace(list, errorBox(error)));
}
