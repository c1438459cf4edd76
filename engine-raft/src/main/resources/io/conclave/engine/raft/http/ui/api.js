// This agent's HTTP API, as the pages use it: the ACL token from the tab's sessionStorage sent as X-Consul-Token
// (never a cookie, so that no other site's page can act for the user), blocking queries for what has an index, and
// a slow poll for the few endpoints that have none.

const TOKEN_KEY = 'conclave.acl.token';

/** How long a blocking query waits on the agent for a change (Consul's default is 5m; shorter notices a dead agent). */
export const BLOCKING_WAIT = '60s';
/** The interval of a poll, for endpoints without a blocking query (the overview's Raft and autopilot views, members). */
export const POLL_INTERVAL_MS = 3000;
/** Two blocking queries on one watch are at least this far apart, so that an index that never moves cannot spin. */
const MIN_QUERY_INTERVAL_MS = 250;
/** After a failure a watch waits, doubling from the first to the last. */
const RETRY_FIRST_MS = 1000;
const RETRY_LAST_MS = 15000;

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  if (value) {
    sessionStorage.setItem(TOKEN_KEY, value);
  } else {
    sessionStorage.removeItem(TOKEN_KEY);
  }
  window.dispatchEvent(new CustomEvent('conclave-token'));
}

/** A refusal or failure of the agent: its HTTP status and its own message (Consul's, such as "Permission denied"). */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Listeners told whether the agent answers at all (true) or could not be reached (false). */
const reachability = new Set();

export function onReachability(listener) {
  reachability.add(listener);
}

function reached(reachable) {
  for (const listener of reachability) {
    listener(reachable);
  }
}

/**
 * One request. Answers {status, text, index}; a status outside ok (except those in `accept`) throws an ApiError with
 * the agent's message, and a network failure one with status 0.
 */
export async function call(method, path, {body, signal, accept = []} = {}) {
  const headers = {};
  const secret = token();
  if (secret) {
    headers['X-Consul-Token'] = secret;
  }
  let response;
  try {
    response = await fetch(path, {method, body, signal, headers, credentials: 'omit', cache: 'no-store', redirect: 'error'});
  } catch (error) {
    if (signal && signal.aborted) {
      throw error;
    }
    reached(false);
    throw new ApiError(0, 'the agent could not be reached');
  }
  reached(true);
  const text = await response.text();
  if (!response.ok && !accept.includes(response.status)) {
    if (response.status === 403 && (!secret || text.includes('ACL not found'))) {
      window.dispatchEvent(new CustomEvent('conclave-needs-token')); // no token, or one the cluster does not know: ask
    }
    throw new ApiError(response.status, text.trim() || response.statusText);
  }
  return {status: response.status, text, index: response.headers.get('X-Consul-Index')};
}

export async function getJson(path, options = {}) {
  const answer = await call('GET', path, options);
  return answer.text ? JSON.parse(answer.text) : null;
}

function sleep(milliseconds, signal) {
  return new Promise(resolve => {
    const timer = setTimeout(resolve, milliseconds);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, {once: true});
  });
}

/**
 * Follows `path` with blocking queries, as Consul's UI does: the first read answers at once, each next one waits on
 * the agent (?index=<X-Consul-Index>&wait=) until something under it changes. onData(json or null for a 404,
 * index) after each answer; onError(error) after a failure, then retries with back-off. Stops when signal aborts.
 */
export function watch(path, signal, onData, onError) {
  (async () => {
    let index = 0;
    let retry = RETRY_FIRST_MS;
    while (!signal.aborted) {
      const started = Date.now();
      try {
        const separator = path.includes('?') ? '&' : '?';
        const url = index > 0 ? `${path}${separator}index=${index}&wait=${BLOCKING_WAIT}` : path;
        const answer = await call('GET', url, {signal, accept: [404]});
        if (signal.aborted) {
          return;
        }
        const next = Number(answer.index || 0);
        index = next < index ? 0 : next; // an index that went back (a restore, another server): start again, as Consul says
        onData(answer.status === 404 || !answer.text ? null : JSON.parse(answer.text), index);
        retry = RETRY_FIRST_MS;
        if (!answer.index) { // not a blocking endpoint: poll it slowly instead
          await sleep(POLL_INTERVAL_MS, signal);
        }
      } catch (error) {
        if (signal.aborted) {
          return;
        }
        onError(error);
        await sleep(retry, signal);
        retry = Math.min(retry * 2, RETRY_LAST_MS);
        continue;
      }
      const elapsed = Date.now() - started;
      if (elapsed < MIN_QUERY_INTERVAL_MS) {
        await sleep(MIN_QUERY_INTERVAL_MS - elapsed, signal);
      }
    }
  })();
}

/**
 * Polls `read` (an async function) every POLL_INTERVAL_MS while the tab is visible, for views no blocking query
 * covers. onData(result) or onError(error) after each round. Stops when signal aborts.
 */
export function poll(read, signal, onData, onError) {
  (async () => {
    while (!signal.aborted) {
      if (document.visibilityState !== 'hidden') {
        try {
          const result = await read();
          if (!signal.aborted) {
            onData(result);
          }
        } catch (error) {
          if (signal.aborted) {
            return;
          }
          onError(error);
        }
      }
      await sleep(POLL_INTERVAL_MS, signal);
    }
  })();
}

/**
 * What this tab's token may do, as Consul's UI asks it: rights in /v1/internal/acl/authorize's shape
 * ([{Resource, Segment, Access}]), answered true or false each, in order. Without ACLs (401 "ACL support disabled")
 * everything is allowed. When the agent cannot say (unreachable, an unknown token), null: the page leaves its actions
 * on, and the agent's refusal of an action shows where the action was.
 */
export async function authorize(rights, signal) {
  try {
    const answer = await call('POST', '/v1/internal/acl/authorize', {body: JSON.stringify(rights), signal, accept: [401]});
    if (answer.status === 401) {
      return rights.map(() => true);
    }
    return JSON.parse(answer.text).map(right => right.Allow === true);
  } catch (error) {
    return null;
  }
}

/** A key's path in the API: each segment percent-encoded, so that any character of a key name survives. */
export function kvPath(key) {
  return '/v1/kv/' + key.split('/').map(encodeURIComponent).join('/');
}
