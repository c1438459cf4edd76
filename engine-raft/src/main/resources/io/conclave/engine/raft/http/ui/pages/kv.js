// Key/Value: a folder (#/kv/a/b/) lists its keys and sub-folders with a blocking query on
// /v1/kv/<folder>?keys&separator=/; a key (#/kv/a/b/c) shows its value and metadata with a blocking query on
// /v1/kv/<key>. Creating uses ?cas=0 (never overwrites), editing ?cas=<ModifyIndex the editor started from> (two
// editors cannot overwrite each other silently), deleting a key ?cas= too, and deleting a folder ?recurse after an
// in-page confirmation. What the token may not do (key:write, asked of /v1/internal/acl/authorize) is shown disabled;
// the agent still decides, and a refusal shows its 403 where the action was.

import {authorize, call, kvPath, watch} from '../api.js';
import {allowOnly, el, encodePath, errorBox, facts, replace, table} from '../dom.js';

function link(path, text) {
  return el('a', {href: '#/kv/' + encodePath(path)}, text);
}

function breadcrumbs(path) {
  const parts = path.split('/');
  const crumbs = [link('', 'All keys')];
  let prefix = '';
  for (let i = 0; i < parts.length; i++) {
    if (parts[i] === '' && i === parts.length - 1) {
      break;
    }
    prefix += parts[i] + (i < parts.length - 1 ? '/' : '');
    crumbs.push(' / ', i < parts.length - 1 ? link(prefix, parts[i]) : el('span', {}, parts[i]));
  }
  return el('nav', {class: 'crumbs', 'aria-label': 'Folder'}, crumbs);
}

function parentOf(key) {
  const trimmed = key.endsWith('/') ? key.slice(0, -1) : key;
  const slash = trimmed.lastIndexOf('/');
  return slash < 0 ? '' : trimmed.slice(0, slash + 1);
}

/** An in-page confirmation (no window.confirm: the page never opens a dialog). */
function confirmation(question, action, label, onConfirm) {
  const box = el('div', {class: 'confirm', role: 'alertdialog', 'aria-label': question});
  const yes = el('button', {type: 'button', class: 'danger', id: 'kv-confirm'}, label);
  const no = el('button', {type: 'button', class: 'secondary'}, 'Cancel');
  yes.addEventListener('click', () => onConfirm(box));
  no.addEventListener('click', () => box.remove());
  replace(box, el('p', {}, question), yes, ' ', no);
  action.after(box);
  yes.focus();
}

/** The value as a person reads it: text, JSON pretty-printed, or base64 when the bytes are not UTF-8. */
export function describeValue(base64) {
  if (base64 === null || base64 === undefined) {
    return {kind: 'empty', text: ''};
  }
  const binary = atob(base64);
  const bytes = Uint8Array.from(binary, character => character.charCodeAt(0));
  let text;
  try {
    text = new TextDecoder('utf-8', {fatal: true}).decode(bytes);
  } catch (e) {
    return {kind: 'base64', text: base64};
  }
  const trimmed = text.trim();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      return {kind: 'json', text: JSON.stringify(JSON.parse(trimmed), null, 2), raw: text};
    } catch (e) {
      // not JSON after all: text
    }
  }
  return {kind: 'text', text, raw: text};
}

function renderFolder(main, folder, signal) {
  const listing = el('div', {id: 'kv-list'}, el('p', {}, 'Loading…'));
  const nameInput = el('input', {id: 'kv-new-name', type: 'text', required: true, autocomplete: 'off', spellcheck: 'false'});
  const valueInput = el('textarea', {id: 'kv-new-value', rows: '4', spellcheck: 'false'});
  const outcome = el('p', {id: 'kv-create-outcome', role: 'status'});
  const form = el('form', {class: 'panel', id: 'kv-create-form'},
      el('h2', {}, 'Create a key'),
      el('label', {for: 'kv-new-name'}, 'Name (under this folder; end it with / for a folder)'), nameInput,
      el('label', {for: 'kv-new-value'}, 'Value'), valueInput,
      el('button', {type: 'submit', id: 'kv-create'}, 'Create'), outcome);
  form.addEventListener('submit', async event => {
    event.preventDefault();
    const key = folder + nameInput.value;
    try {
      const answer = await call('PUT', kvPath(key) + '?cas=0', {body: key.endsWith('/') ? '' : valueInput.value});
      if (answer.text.trim() === 'true') {
        location.hash = '#/kv/' + encodePath(key);
      } else {
        replace(outcome, errorBox(new Error('Not created: a key of that name exists.')));
      }
    } catch (error) {
      replace(outcome, errorBox(error));
    }
  });
  const header = [el('h1', {}, 'Key/Value'), breadcrumbs(folder)];
  if (folder !== '') {
    const remove = el('button', {type: 'button', class: 'danger', id: 'kv-delete-folder'}, 'Delete this folder…');
    remove.addEventListener('click', () => confirmation(`Delete the folder ${folder} and every key under it?`, remove, 'Delete all',
        async box => {
          try {
            await call('DELETE', kvPath(folder) + '?recurse');
            location.hash = '#/kv/' + encodePath(parentOf(folder));
          } catch (error) {
            box.append(errorBox(error));
          }
        }));
    header.push(remove);
    authorize([{Resource: 'key', Segment: folder, Access: 'write'}], signal).then(allowed => {
      allowOnly(remove, allowed ? allowed[0] : null, 'key:write');
    });
  }
  main.append(...header, listing, form);
  watch(kvPath(folder) + '?keys&separator=/', signal, keys => {
    const rows = (keys || []).filter(key => key !== folder).map(key => [
      link(key, key.slice(folder.length)),
      key.endsWith('/') ? 'folder' : 'key',
    ]);
    replace(listing, table(null, ['Name', 'Kind'], rows, 'No keys here.'));
  }, error => replace(listing, errorBox(error)));
}

function renderKey(main, key, signal) {
  const details = el('div', {id: 'kv-details'}, el('p', {}, 'Loading…'));
  const valueBox = el('pre', {id: 'kv-value', class: 'value', tabindex: '0', 'aria-label': 'Value'});
  const kindLabel = el('p', {id: 'kv-value-kind', class: 'muted'});
  const editButton = el('button', {type: 'button', id: 'kv-edit'}, 'Edit');
  const deleteButton = el('button', {type: 'button', class: 'danger', id: 'kv-delete'}, 'Delete…');
  const editor = el('form', {class: 'panel', id: 'kv-editor-form', hidden: true});
  const outcome = el('p', {id: 'kv-outcome', role: 'status'});
  let current = null; // the entry as last read
  let editingFrom = null; // the ModifyIndex the editor's text started from
  let mayWrite = null; // whether the token may change the key: null while not known
  const rights = el('p', {id: 'kv-rights', class: 'muted', hidden: true});
  /** Edit and delete: off when there is no key, or the token may not write it. */
  const enableActions = () => {
    for (const button of [editButton, deleteButton]) {
      button.disabled = !current || mayWrite === false;
      allowOnly(button, mayWrite, 'key:write');
    }
  };
  authorize([{Resource: 'key', Segment: key, Access: 'write'}], signal).then(allowed => {
    mayWrite = allowed ? allowed[0] : null;
    rights.hidden = mayWrite !== false;
    replace(rights, 'Your ACL token may read this key but not change it (key:write): editing and deleting are off.');
    enableActions();
  });

  main.append(el('h1', {}, 'Key/Value'), breadcrumbs(key), el('h2', {id: 'kv-key'}, key), details, kindLabel, valueBox,
      el('div', {class: 'actions'}, editButton, ' ', deleteButton), rights, editor, outcome);

  editButton.addEventListener('click', () => {
    if (!current) {
      return;
    }
    const shown = describeValue(current.Value);
    const textarea = el('textarea', {id: 'kv-editor', rows: '8', spellcheck: 'false'});
    textarea.value = shown.kind === 'base64' ? '' : (shown.raw || '');
    editingFrom = current.ModifyIndex;
    const save = el('button', {type: 'submit', id: 'kv-save'}, 'Save');
    const cancel = el('button', {type: 'button', class: 'secondary'}, 'Cancel');
    cancel.addEventListener('click', () => {
      editor.hidden = true;
      editingFrom = null;
    });
    replace(editor, el('label', {for: 'kv-editor'}, `New value (saved only if the key is still at ModifyIndex ${editingFrom})`),
        textarea, save, ' ', cancel);
    editor.hidden = false;
    textarea.focus();
  });
  editor.addEventListener('submit', async event => {
    event.preventDefault();
    const text = document.getElementById('kv-editor').value;
    try {
      const answer = await call('PUT', `${kvPath(key)}?cas=${editingFrom}`, {body: text});
      if (answer.text.trim() === 'true') {
        editor.hidden = true;
        editingFrom = null;
        replace(outcome, 'Saved.');
      } else {
        replace(outcome, errorBox(new Error('Not saved: someone changed the key since you opened the editor (it is now at ModifyIndex '
            + (current ? current.ModifyIndex : '?') + '). Your text is still in the editor; look at the new value, then edit again.')));
      }
    } catch (error) {
      replace(outcome, errorBox(error));
    }
  });
  deleteButton.addEventListener('click', () => confirmation(`Delete the key ${key}?`, deleteButton, 'Delete', async box => {
    try {
      const answer = await call('DELETE', `${kvPath(key)}?cas=${current ? current.ModifyIndex : 0}`);
      if (answer.text.trim() === 'true') {
        location.hash = '#/kv/' + encodePath(parentOf(key));
      } else {
        box.append(errorBox(new Error('Not deleted: the key changed meanwhile; look at it again.')));
      }
    } catch (error) {
      box.append(errorBox(error));
    }
  }));

  watch(kvPath(key), signal, entries => {
    current = entries && entries.length ? entries[0] : null;
    if (!current) {
      replace(details, el('p', {class: 'warn'}, 'This key does not exist (or was deleted).'));
      replace(valueBox);
      replace(kindLabel);
      enableActions();
      return;
    }
    enableActions();
    const shown = describeValue(current.Value);
    replace(details, facts([
      ['Flags', String(current.Flags)],
      ['Create index', String(current.CreateIndex)],
      ['Modify index', el('span', {id: 'kv-modify-index'}, String(current.ModifyIndex))],
      ['Lock index', String(current.LockIndex)],
      ['Session', current.Session ? el('a', {href: '#/sessions'}, current.Session) : 'none'],
    ]));
    replace(kindLabel, {empty: 'Empty value.', text: 'Text.', json: 'JSON, pretty-printed.', base64: 'Binary, shown as base64.'}[shown.kind]);
    replace(valueBox, shown.text);
    if (editingFrom !== null && editingFrom !== current.ModifyIndex) {
      replace(outcome, el('p', {class: 'warn'}, `The key changed while you edit (now ModifyIndex ${current.ModifyIndex}): saving will be refused.`));
    }
  }, error => replace(details, errorBox(error)));
}

export function render(main, rest, signal) {
  const path = rest.split('/').map(segment => {
    try {
      return decodeURIComponent(segment);
    } catch (e) {
      return segment;
    }
  }).join('/');
  if (path === '' || path.endsWith('/')) {
    renderFolder(main, path, signal);
  } else {
    renderKey(main, path, signal);
  }
}
