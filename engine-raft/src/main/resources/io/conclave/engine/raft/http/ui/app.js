// The UI's shell: the route in the URL's fragment (#/kv/a/b) picks a page; each page runs until the route changes,
// when its signal aborts its blocking queries. The banner says when the agent is unreachable or refuses the token.

import {onReachability, setToken, token} from './api.js';
import {replace} from './dom.js';
import * as overview from './pages/overview.js';
import * as members from './pages/members.js';
import * as kv from './pages/kv.js';
import * as sessions from './pages/sessions.js';
import * as services from './pages/services.js';
import * as nodes from './pages/nodes.js';
import * as timeline from './pages/timeline.js';

const PAGES = {overview, members, kv, sessions, services, nodes, timeline};

let running = null;

function route() {
  const fragment = location.hash.replace(/^#\/?/, '');
  const slash = fragment.indexOf('/');
  const name = slash < 0 ? fragment : fragment.slice(0, slash);
  const rest = slash < 0 ? '' : fragment.slice(slash + 1);
  return PAGES[name] ? {name, rest} : {name: 'overview', rest: ''};
}

function show() {
  if (running) {
    running.abort();
  }
  running = new AbortController();
  const {name, rest} = route();
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.dataset.page === name) {
      link.setAttribute('aria-current', 'page');
    } else {
      link.removeAttribute('aria-current');
    }
  }
  const main = document.getElementById('main');
  replace(main);
  main.dataset.page = name;
  PAGES[name].render(main, rest, running.signal);
}

function banner(text) {
  const node = document.getElementById('banner');
  node.textContent = text || '';
  node.hidden = !text;
}

function tokenForm() {
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  document.getElementById('token-button').addEventListener('click', () => {
    form.hidden = !form.hidden;
    if (!form.hidden) {
      input.value = token();
      input.focus();
    }
  });
  form.addEventListener('submit', event => {
    event.preventDefault();
    setToken(input.value.trim());
    form.hidden = true;
    show();
  });
  document.getElementById('token-clear').addEventListener('click', () => {
    setToken('');
    input.value = '';
    form.hidden = true;
    show();
  });
  // a page refused for its token (403 "ACL not found") opens the prompt
  window.addEventListener('conclave-needs-token', () => {
    form.hidden = false;
    input.focus();
  });
}

function start() {
  tokenForm();
  onReachability(reachable => banner(reachable ? '' : 'The agent cannot be reached; retrying.'));
  window.addEventListener('hashchange', show);
  if (!location.hash) {
    history.replaceState(null, '', '#/overview');
  }
  show();
}

start();
