// app.js is the nanobot web console: one page with hash-routed tabs over the JSON API under /api/.
// All DOM is built with createElement and textContent: nothing from the server or the model is parsed as HTML.
'use strict';

const $ = id => document.getElementById(id);
let csrf = '';
let leaving = false; // set once the page is on its way to /signed-out

// el builds an element. props: class, text, on<event> handlers, other attributes; kids: nodes or strings.
function el(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of kids) if (c != null) e.append(c);
  return e;
}

function signedOut() {
  leaving = true;
  location.href = '/signed-out';
}

// api calls the JSON API. State changes carry the CSRF token; a 401 from any call means the session is gone.
// Errors carry the HTTP status and the decoded body.
async function api(method, path, body) {
  const opts = { method, credentials: 'same-origin', headers: {} };
  if (method !== 'GET') {
    opts.headers['X-CSRF-Token'] = csrf;
    opts.headers['Content-Type'] = 'application/json';
    if (method !== 'DELETE') opts.body = JSON.stringify(body || {});
  }
  const res = await fetch(path, opts);
  if (res.status === 401) {
    signedOut();
    throw new Error('signed out');
  }
  let data = null;
  if (res.status !== 204) data = await res.json().catch(() => null);
  if (!res.ok) {
    const err = new Error((data && data.error) || `${res.status} ${res.statusText}`);
    err.status = res.status;
    err.data = data;
    throw err;
  }
  return data;
}

const enc = encodeURIComponent;

function showError(err) {
  if (leaving) return;
  const e = $('error');
  e.textContent = err.message || String(err);
  e.hidden = false;
}

function fail(box, err) {
  box.replaceChildren(el('p', { class: 'error', text: err.message }));
}

function status(id, text, bad) {
  $(id).textContent = text;
  $(id).classList.toggle('bad', !!bad);
}

function fmtTime(s) {
  if (!s) return '—';
  const d = new Date(s);
  return isNaN(d) ? s : d.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
}

function time(s) {
  return el('time', { datetime: s, text: fmtTime(s) });
}

function firstLine(s) {
  return (s || '').trim().split('\n')[0] || '(empty)';
}

function clip(s, n) {
  s = s || '';
  return s.length > n ? s.slice(0, n) + '…' : s;
}

function button(text, onclick, cls) {
  return el('button', { type: 'button', class: cls, text, onclick });
}

// table builds a table; on narrow screens CSS shows each row as a card, the cell's data-label naming the column.
function table(heads, rows) {
  return el('div', { class: 'table-wrap' }, el('table', {},
    el('thead', {}, el('tr', {}, ...heads.map(h => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, ...rows.map(cells => el('tr', {},
      ...cells.map((c, i) => el('td', { 'data-label': heads[i] }, c)))))));
}

// ---- Chat ----

let lastId = 0;
let loading = null;
let again = false;
let working = false;

function nearBottom() {
  return innerHeight + scrollY >= document.documentElement.scrollHeight - 120;
}

function scrollDown() {
  scrollTo(0, document.documentElement.scrollHeight);
}

function messageEl(m) {
  const role = m.role === 'assistant' ? 'assistant' : 'user';
  const body = el('div', { class: 'body' });
  if (role === 'assistant') body.append(Markdown.render(m.text));
  else body.textContent = m.text;
  return el('article', { class: 'msg ' + role, 'data-id': m.id }, body, time(m.at));
}

// loadMessages fetches the messages after the last one shown. Calls while a fetch runs are folded into one more.
// The running flag of the answer is used only when asked (on start and reconnect): otherwise turn events, which
// come in order, are the fresher news.
let syncRunning = false;
function loadMessages(sync) {
  syncRunning = syncRunning || !!sync;
  if (loading) {
    again = true;
    return loading;
  }
  loading = (async () => {
    do {
      again = false;
      const data = await api('GET', '/api/messages?after=' + lastId);
      const stick = nearBottom();
      for (const m of data.messages) {
        if (m.id <= lastId) continue;
        $('messages').append(messageEl(m));
        lastId = m.id;
      }
      if (syncRunning) setWorking(data.running);
      syncRunning = false;
      if (stick) scrollDown();
    } while (again);
  })().catch(showError).finally(() => { loading = null; });
  return loading;
}

function setWorking(running) {
  if (working && !running) $('progress').textContent = '';
  working = !!running;
  $('working').hidden = !working;
}

function showProgress(p) {
  const line = $('progress');
  if (p.kind === 'tool') {
    line.textContent = `⚙ ${p.tool} ${clip(p.args, 200)}`;
  } else if (p.kind === 'tool_done') {
    line.textContent = p.failed ? `${p.tool} failed after ${p.duration_ms} ms` : `${p.tool} done in ${p.duration_ms} ms`;
  }
  line.classList.toggle('bad', !!p.failed);
  setWorking(true);
}

// note shows a slash command's reply in the conversation as a system note.
function note(command, reply) {
  const stick = nearBottom();
  $('messages').append(el('div', { class: 'note', role: 'status' },
    el('span', { class: 'command', text: command }), el('span', { class: 'reply', text: reply })));
  if (stick) scrollDown();
}

// pending is the message being sent and its id: a send that failed on the way and is tried again with the same text
// keeps the id, so the server stores the message once even if the first try reached it.
let pending = null;

function messageID(text) {
  if (!pending || pending.text !== text) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    pending = { text, id: Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('') };
  }
  return pending.id;
}

async function send(text) {
  const data = await api('POST', '/api/messages', { text, id: messageID(text) });
  pending = null;
  if (data && 'reply' in data) {
    if (text.split(/\s/)[0] === '/new') {
      $('messages').replaceChildren();
      for (const [id, card] of cards) if (card.classList.contains('done')) { card.remove(); cards.delete(id); }
    }
    note(text, data.reply);
  } else {
    loadMessages();
  }
}

// focusInput focuses the message box, except on touch screens, where it would pop up the keyboard unasked.
function focusInput() {
  if (matchMedia('(pointer: fine)').matches) $('message-input').focus();
}

function setupChat() {
  const input = $('message-input');
  $('composer').addEventListener('submit', async e => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    $('send').disabled = true;
    try {
      await send(text);
      if (input.value.trim() === text) input.value = '';
    } catch (err) {
      showError(err);
    } finally {
      $('send').disabled = false;
      focusInput();
    }
  });
  input.addEventListener('keydown', e => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => send('/stop').catch(showError));
  $('new-chat').addEventListener('click', () => send('/new').catch(showError));
}

// ---- Approvals ----

const cards = new Map(); // approval id → card

function addApproval(a) {
  if (cards.has(a.id)) return;
  const card = el('div', { class: 'approval', 'data-id': a.id, role: 'group', 'aria-label': 'Approval request' },
    el('p', { class: 'label', text: 'nanobot asks to run:' }),
    el('pre', { class: 'command', text: a.command }),
    el('p', { class: 'reason', text: a.reason }),
    el('p', { class: 'actions' },
      button('Approve', () => decide(a.id, true), 'approve'), ' ',
      button('Deny', () => decide(a.id, false), 'deny'),
      a.expires ? el('small', { text: ' until ' + fmtTime(a.expires) }) : null));
  cards.set(a.id, card);
  $('approvals').append(card);
  if (nearBottom()) scrollDown();
}

// approvalDone replaces a card's buttons by the outcome; it may come both from the POST and from the event.
function approvalDone(id, outcome) {
  const card = cards.get(id);
  if (!card || card.classList.contains('done')) return;
  card.classList.add('done', 'outcome-' + outcome.replace(/\W+/g, '-'));
  card.querySelector('.actions').replaceWith(el('p', { class: 'outcome', text: outcome[0].toUpperCase() + outcome.slice(1) }));
}

async function decide(id, approve) {
  const card = cards.get(id);
  card.querySelectorAll('.actions button').forEach(b => { b.disabled = true; });
  try {
    const r = await api('POST', '/api/approvals/' + enc(id), { approve });
    approvalDone(id, r.outcome);
  } catch (err) {
    if (err.status === 404) return approvalDone(id, 'no longer pending');
    card.querySelectorAll('.actions button').forEach(b => { b.disabled = false; });
    showError(err);
  }
}

// loadApprovals shows the pending approvals; cards that are no longer pending (missed while offline) are closed.
async function loadApprovals() {
  try {
    const { approvals } = await api('GET', '/api/approvals');
    const pending = new Set(approvals.map(a => a.id));
    for (const id of cards.keys()) if (!pending.has(id)) approvalDone(id, 'no longer pending');
    approvals.forEach(addApproval);
  } catch (err) {
    showError(err);
  }
}

// ---- Events ----

function subscribe() {
  const es = new EventSource('/api/events');
  const on = (name, fn) => es.addEventListener(name, e => {
    let data;
    try { data = JSON.parse(e.data || '{}'); } catch { return; }
    fn(data);
  });
  // Each (re)connect may follow missed events: catch up on messages and approvals.
  es.addEventListener('open', () => {
    $('error').hidden = true;
    loadMessages(true);
    loadApprovals();
  });
  on('message', () => loadMessages());
  on('turn', d => setWorking(d.running));
  on('progress', showProgress);
  on('approval', addApproval);
  on('approval_done', d => approvalDone(d.id, d.outcome));
  es.addEventListener('error', () => {
    // The browser retries by itself unless the answer was not an event stream (e.g. a 401): then it gives up,
    // and we check the session (a 401 leads to /signed-out) and start over.
    if (es.readyState !== EventSource.CLOSED) return;
    api('GET', '/api/session').catch(() => {}).then(() => setTimeout(subscribe, 5000));
  });
}

// ---- Overview ----

function budgetEl(b) {
  const used = b.used_today || 0;
  const words = b.limit
    ? `Today: ${used.toLocaleString()} of ${b.limit.toLocaleString()} tokens (${Charts.percent(used, b.limit)})`
    : `Today: ${used.toLocaleString()} tokens, no daily limit`;
  return el('figure', { class: 'budget-box' }, el('figcaption', { text: words }), Charts.budget(b));
}

async function loadOverview() {
  const box = $('overview');
  try {
    const o = await api('GET', '/api/overview');
    box.replaceChildren(
      el('p', { class: 'meta' }, el('strong', { text: 'nanobot ' + o.version }), ' · model ', el('code', { text: o.model })),
      budgetEl(o.budget || {}),
      el('ul', { class: 'lines' }, ...(o.lines || []).map(l => el('li', { text: l }))));
  } catch (err) {
    fail(box, err);
  }
}

// ---- Jobs ----

async function loadJobs() {
  const box = $('jobs');
  try {
    const { jobs } = await api('GET', '/api/jobs');
    if (!jobs.length) return box.replaceChildren(el('p', { class: 'empty', text: 'No scheduled jobs.' }));
    box.replaceChildren(table(['Job', 'Chat', 'Message', 'Schedule', 'Next run', 'Last run', ''], jobs.map(jobRow)));
  } catch (err) {
    fail(box, err);
  }
}

function jobRow(j) {
  // act runs a job action, then shows the list again.
  const act = (label, fn, cls) => button(label, () => fn().then(loadJobs).catch(err => status('jobs-status', err.message, true)), cls);
  return [
    `#${j.id}` + (j.paused ? ' (paused)' : ''), j.chat, j.message, j.schedule, time(j.next_run), time(j.last_run),
    el('span', { class: 'actions' },
      act(j.paused ? 'Resume' : 'Pause', () => api('POST', `/api/jobs/${enc(j.id)}/pause`, { paused: !j.paused })),
      act('Run now', () => api('POST', `/api/jobs/${enc(j.id)}/run`).then(() => status('jobs-status', `Job #${j.id} queued.`))),
      act('Remove', async () => {
        if (confirm(`Remove job #${j.id}, “${clip(j.message, 60)}”?`)) await api('DELETE', `/api/jobs/${enc(j.id)}`);
      }, 'danger')),
  ];
}

// ---- Memory ----

const mem = { scope: '', base: '' }; // base: the text the edit started from

async function loadMemory() {
  const list = $('memory-scopes');
  try {
    const { scopes } = await api('GET', '/api/memory');
    list.replaceChildren(...scopes.map(s => el('li', {},
      el('button', { type: 'button', class: 'scope', 'data-scope': s.scope, 'aria-current': s.scope === mem.scope ? 'true' : null,
        onclick: () => openScope(s.scope) }, el('span', { text: s.scope }), el('small', { text: fmtTime(s.updated) })))));
    if (!mem.scope) openScope(scopes.length ? scopes[0].scope : 'global');
  } catch (err) {
    fail(list, err);
  }
}

async function openScope(scope) {
  try {
    const d = await api('GET', '/api/memory/doc?scope=' + enc(scope));
    showDoc(d);
    status('memory-status', '');
  } catch (err) {
    status('memory-status', err.message, true);
  }
}

function showDoc(d) {
  mem.scope = d.scope;
  mem.base = d.doc;
  const ed = $('memory-editor');
  ed.value = d.doc;
  ed.disabled = $('memory-save').disabled = false;
  $('memory-title').textContent = 'MEMORY of ' + d.scope;
  $('memory-view').hidden = true;
  for (const b of document.querySelectorAll('#memory-scopes .scope')) {
    if (b.dataset.scope === d.scope) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
  const revs = d.revisions || [];
  $('revisions').replaceChildren(...revs.map(r => el('li', {},
    el('button', { type: 'button', class: 'revision', onclick: () => viewText('Revision of ' + fmtTime(r.at), r.doc) },
      time(r.at), ' ', el('span', { text: firstLine(r.doc) })))));
  if (!revs.length) $('revisions').append(el('li', { class: 'empty', text: 'No earlier revisions.' }));
}

// viewText shows a text beside the editor with a button that copies it into the editor.
function viewText(title, text) {
  $('memory-view-title').textContent = title;
  $('memory-view-text').textContent = text;
  $('memory-view').hidden = false;
  $('memory-use').onclick = () => {
    $('memory-editor').value = text;
    status('memory-status', 'Put into the editor; Save keeps it.');
  };
}

async function saveMemory() {
  try {
    const d = await api('PUT', '/api/memory/doc?scope=' + enc(mem.scope), { doc: $('memory-editor').value, base: mem.base });
    showDoc(d);
    status('memory-status', 'Saved.');
    loadMemory();
  } catch (err) {
    if (err.status !== 409 || !err.data) return status('memory-status', err.message, true);
    // Someone (the bot, most likely) changed it: show their text; saving again replaces it on purpose.
    mem.base = err.data.doc;
    status('memory-status', 'MEMORY changed meanwhile. Its current text is below; Save again to replace it with yours.', true);
    viewText('Current text', err.data.doc);
  }
}

// ---- History ----

async function loadHistory() {
  const sel = $('history-scope');
  if (!sel.options.length) {
    try {
      const { scopes } = await api('GET', '/api/memory');
      const names = new Set(['global', ...scopes.map(s => s.scope)]);
      sel.replaceChildren(...[...names].map(n => el('option', { value: n, text: n })));
    } catch (err) {
      return fail($('history-results'), err);
    }
  }
  searchHistory();
}

async function searchHistory() {
  const box = $('history-results');
  const q = new URLSearchParams({ scope: $('history-scope').value, q: $('history-q').value.trim(), limit: 50 });
  try {
    const { entries } = await api('GET', '/api/history?' + q);
    box.replaceChildren(...entries.map(e => el('li', {}, time(e.at), el('div', { class: 'text', text: e.text }))));
    if (!entries.length) box.append(el('li', { class: 'empty', text: 'Nothing found.' }));
  } catch (err) {
    fail(box, err);
  }
}

// ---- Audit ----

// dayStart turns a date input's value into RFC 3339 for local midnight of that day, plus days.
function dayStart(value, days) {
  const [y, m, d] = value.split('-').map(Number);
  return new Date(y, m - 1, d + days).toISOString().replace(/\.\d+Z$/, 'Z');
}

async function loadAudit() {
  const box = $('audit-results');
  const q = new URLSearchParams({ limit: 100 });
  for (const f of ['session', 'tool', 'verdict']) {
    const v = $('audit-' + f).value.trim();
    if (v) q.set(f, v);
  }
  if ($('audit-since').value) q.set('since', dayStart($('audit-since').value, 0));
  if ($('audit-until').value) q.set('until', dayStart($('audit-until').value, 1)); // through the end of that day
  try {
    const { entries } = await api('GET', '/api/audit?' + q);
    if (!entries.length) return box.replaceChildren(el('p', { class: 'empty', text: 'No entries.' }));
    box.replaceChildren(table(['Time', 'Session', 'Tool', 'Arguments', 'Verdict', 'Outcome', 'Reason', 'Duration', 'Exit'],
      entries.map(e => [time(e.at), e.session, e.tool, el('code', { class: 'args', title: e.args, text: clip(e.args, 300) }),
        el('span', { class: 'verdict ' + e.verdict, text: e.verdict }), e.outcome, e.reason,
        e.duration_ms == null ? '' : e.duration_ms + ' ms', e.exit_code == null ? '' : String(e.exit_code)])));
  } catch (err) {
    fail(box, err);
  }
}

// ---- Usage ----

// series groups the usage rows by key into per-day token counts (prompt + completion), the largest first;
// past seven the rest are summed as "other" so the colours stay apart.
function series(u, key) {
  const index = new Map(u.days.map((d, i) => [d, i]));
  const groups = new Map();
  for (const r of u.rows) {
    const k = key(r) || '(none)';
    if (!groups.has(k)) groups.set(k, { name: k, values: u.days.map(() => 0), total: 0, prompt: 0, cached: 0 });
    const g = groups.get(k), tokens = (r.prompt || 0) + (r.completion || 0);
    if (index.has(r.day)) g.values[index.get(r.day)] += tokens;
    g.total += tokens;
    g.prompt += r.prompt || 0;
    g.cached += r.cached || 0;
  }
  const all = [...groups.values()].sort((a, b) => b.total - a.total);
  if (all.length <= 8) return all;
  const other = { name: 'other', values: u.days.map(() => 0), total: 0, prompt: 0, cached: 0 };
  for (const g of all.slice(7)) {
    g.values.forEach((v, i) => { other.values[i] += v; });
    for (const k of ['total', 'prompt', 'cached']) other[k] += g[k];
  }
  return [...all.slice(0, 7), other];
}

async function loadUsage() {
  const box = $('usage');
  try {
    const u = await api('GET', '/api/usage?days=30');
    const sum = k => u.rows.reduce((s, r) => s + (r[k] || 0), 0);
    const prompt = sum('prompt'), tokens = prompt + sum('completion');
    box.replaceChildren(
      budgetEl(u.budget || {}),
      el('p', { class: 'meta', text: `${tokens.toLocaleString()} tokens in ${sum('calls').toLocaleString()} calls; ` +
        `cached: ${Charts.percent(sum('cached'), prompt)} of prompt tokens.` }),
      Charts.stacked('by-model', 'Tokens per day by model', u.days, series(u, r => r.model)),
      Charts.stacked('by-session', 'Tokens per day by chat', u.days, series(u, r => r.session)));
  } catch (err) {
    fail(box, err);
  }
}

// ---- Sessions ----

// browser names a User-Agent briefly, e.g. "Firefox on Linux".
function browser(ua) {
  const name = [['Edg/', 'Edge'], ['Firefox/', 'Firefox'], ['Chrome/', 'Chrome'], ['Safari/', 'Safari']].find(([k]) => ua.includes(k));
  const os = [['Android', 'Android'], ['iPhone', 'iOS'], ['iPad', 'iPadOS'], ['Windows', 'Windows'], ['Mac OS', 'macOS'], ['Linux', 'Linux']]
    .find(([k]) => ua.includes(k));
  return name ? name[1] + (os ? ' on ' + os[1] : '') : clip(ua || 'unknown', 40);
}

async function loadSessions() {
  const box = $('sessions');
  try {
    const { sessions } = await api('GET', '/api/sessions');
    box.replaceChildren(table(['Browser', 'Signed in', 'Last seen', 'Expires', ''], sessions.map(s => [
      el('span', { title: s.agent, text: browser(s.agent) + (s.current ? ' (this one)' : '') }),
      time(s.created), time(s.last_seen), time(s.expires),
      button('Revoke', () => revoke(s), 'danger')])));
  } catch (err) {
    fail(box, err);
  }
}

async function revoke(s) {
  try {
    await api('DELETE', '/api/sessions/' + enc(s.id));
    if (s.current) signedOut();
    else loadSessions();
  } catch (err) {
    showError(err);
  }
}

// ---- Start ----

const views = {
  chat: focusInput,
  overview: loadOverview, jobs: loadJobs, memory: loadMemory, history: loadHistory,
  audit: loadAudit, usage: loadUsage, sessions: loadSessions,
};

// route shows the tab named by the location's hash and refreshes it.
function route() {
  let tab = location.hash.slice(1);
  if (!(tab in views)) tab = 'chat';
  for (const name of Object.keys(views)) {
    $('view-' + name).hidden = name !== tab;
    if (name === tab) $('tab-' + name).setAttribute('aria-current', 'page');
    else $('tab-' + name).removeAttribute('aria-current');
  }
  $('tab-' + tab).scrollIntoView({ block: 'nearest', inline: 'nearest' }); // the tab row scrolls on phones
  $('error').hidden = true;
  views[tab]();
}

async function start() {
  try {
    csrf = (await api('GET', '/api/session')).csrf;
  } catch (err) {
    if (err.status) showError(err);
    else showError(new Error('Cannot reach nanobot: ' + err.message));
    return;
  }
  setupChat();
  $('memory-save').addEventListener('click', saveMemory);
  $('history-form').addEventListener('submit', e => { e.preventDefault(); searchHistory(); });
  $('audit-form').addEventListener('submit', e => { e.preventDefault(); loadAudit(); });
  $('sign-out').addEventListener('click', () => api('POST', '/api/logout').then(signedOut, showError));
  addEventListener('hashchange', route);
  route();
  loadMessages(true);
  loadApprovals();
  subscribe();
}

start();
