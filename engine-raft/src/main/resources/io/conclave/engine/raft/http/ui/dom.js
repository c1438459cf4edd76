// Building the page. Every string from the cluster (key names, values, node names, tags, error messages) goes into
// the document as text: element children are text nodes and attributes are set one by one, never parsed as HTML.

/**
 * An element: el('a', {href: '#/kv/', class: 'x', onclick: f}, 'text', otherNode). A property named on... adds a
 * listener, text sets textContent, class the class list; anything else is an attribute (or a property for booleans).
 */
export function el(tag, properties = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(properties)) {
    if (value === undefined || value === null || value === false) {
      continue;
    }
    if (name === 'class') {
      node.className = value;
    } else if (name === 'text') {
      node.textContent = value;
    } else if (name.startsWith('on') && typeof value === 'function') {
      node.addEventListener(name.slice(2), value);
    } else if (value === true) {
      node.setAttribute(name, '');
    } else {
      node.setAttribute(name, String(value));
    }
  }
  append(node, children);
  return node;
}

/** Adds children: nodes as they are, anything else as a text node; arrays are flattened, null and false skipped. */
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replaces the children of node. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** A table: headers, then rows of cells (a cell is a node or text). */
export function table(caption, headers, rows, empty = 'None.') {
  if (rows.length === 0) {
    return el('p', {class: 'empty'}, empty);
  }
  return el('table', {},
      caption ? el('caption', {}, caption) : null,
      el('thead', {}, el('tr', {}, headers.map(header => el('th', {scope: 'col'}, header)))),
      el('tbody', {}, rows.map(row => el('tr', {}, row.map(cell => el('td', {}, cell))))));
}

/** A definition list from [term, value] pairs. */
export function facts(pairs) {
  return el('dl', {class: 'facts'}, pairs.map(([term, value]) => [el('dt', {}, term), el('dd', {}, value)]));
}

/** A status badge: passing, warning, critical, alive, failed... */
export function badge(status, text = status) {
  return el('span', {class: 'badge ' + String(status).replace(/[^a-z-]/g, '')}, text);
}

/** An error as a page shows it: the status and the agent's own message, as text; a refusal says what it means. */
export function errorBox(error) {
  const status = error && error.status ? `${error.status}: ` : '';
  const message = error && error.message ? error.message : String(error);
  const meaning = error && error.status === 403 && message.startsWith('Permission denied')
    ? ' (the ACL token in use does not allow this)' : '';
  return el('p', {class: 'error', role: 'alert'}, status + message + meaning);
}

/**
 * Turns a control off when the token may not use it (allowed false), saying which right it lacks in its title and its
 * accessible description; allowed true or null (not known) leaves it as it is.
 */
export function allowOnly(control, allowed, right) {
  if (allowed === false) {
    control.disabled = true;
    control.dataset.denied = right;
    control.title = `Your ACL token lacks ${right}`;
  }
  return control;
}

/** A path in the page's URL fragment: each segment percent-encoded, the slashes kept. */
export function encodePath(path) {
  return path.split('/').map(encodeURIComponent).join('/');
}

export function decodePath(path) {
  return path.split('/').map(segment => {
    try {
      return decodeURIComponent(segment);
    } catch (e) {
      return segment;
    }
  }).join('/');
}
