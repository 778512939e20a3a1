// The console's shell: sign-in, the navigation and the page router. A page is
// `#name/argument?parameter=value`; every control of a page changes the
// address, so any view can be bookmarked or reloaded.

import { api, session } from './api.js';
import { errorBox, h } from './dom.js';
import * as requests from './requests.js';
import * as settings from './settings.js';
import * as skills from './skills.js';
import * as usage from './usage.js';

const PAGES = { usage, requests, skills, settings };
const $ = (id) => document.getElementById(id);

/** the org the key belongs to (GET /api/v1/settings), once signed in */
let org = null;
let renders = 0;

function parseHash() {
  const raw = location.hash.slice(1);
  const [path, query = ''] = raw.split('?');
  const [name, ...rest] = path.split('/');
  return { name: PAGES[name] ? name : 'usage', arg: rest.length > 0 ? decodeURIComponent(rest.join('/')) : undefined, params: new URLSearchParams(query) };
}

/** The address of a page view; parameters without a value are left out. */
function href(name, arg, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString();
  return `#${name}${arg === undefined ? '' : `/${encodeURIComponent(arg)}`}${query ? `?${query}` : ''}`;
}

function showSignIn(message) {
  org = null;
  $('nav').hidden = true;
  $('who').hidden = true;
  $('sign-out').hidden = true;
  $('page').hidden = true;
  $('page').replaceChildren();
  $('sign-in').hidden = false;
  $('sign-in-error').hidden = !message;
  $('sign-in-error').textContent = message ?? '';
  $('key').focus();
}

async function render() {
  const seq = ++renders;
  const { name, arg, params } = parseHash();
  const main = $('page');
  main.removeAttribute('data-ready');
  main.replaceChildren(h('p', { class: 'loading' }, 'Loading…'));
  for (const a of $('nav').querySelectorAll('a')) a.classList.toggle('active', a.getAttribute('href') === `#${name}`);
  let view;
  try {
    view = await PAGES[name].render({ org, arg, params, href, go: (to) => (location.hash = to), reload: render });
  } catch (err) {
    if (err.status === 401) return showSignIn('The gateway no longer accepts this key; sign in again.');
    view = errorBox(err);
  }
  // a later navigation has already replaced this one
  if (seq !== renders) return;
  main.replaceChildren(view);
  main.dataset.ready = name;
  document.title = `${PAGES[name].title} · Gateway console`;
}

async function enter() {
  org = await api.settings();
  $('sign-in').hidden = true;
  $('nav').hidden = false;
  $('who').hidden = false;
  $('who').textContent = `org ${org.org_id} · ${org.plan}`;
  $('sign-out').hidden = false;
  $('page').hidden = false;
  await render();
}

async function signIn(event) {
  event.preventDefault();
  const key = $('key').value.trim();
  session.signIn(key);
  try {
    await enter();
    $('key').value = '';
  } catch (err) {
    session.signOut();
    showSignIn(err.status === 401 || err.status === 403 ? `Not accepted: ${err.message}` : err.message);
  }
}

$('sign-in-form').addEventListener('submit', signIn);
$('sign-out').addEventListener('click', () => {
  session.signOut();
  showSignIn();
});
window.addEventListener('hashchange', () => org && render());

if (session.key()) {
  enter().catch((err) => {
    session.signOut();
    showSignIn(err.message);
  });
} else {
  showSignIn();
}
