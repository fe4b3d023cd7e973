// The web remote: drives harmonia-play through the JSON control protocol over
// WebSocket (specs/control-protocol.md). One state object, one render per
// region, one client that matches replies to requests by message_id.
"use strict";

const $ = (id) => document.getElementById(id);

const state = {
  connection: "connecting", // connecting | open | down | auth
  player: { state: "stopped", volume: 100, muted: false, index: null, track: null, repeat: "off", shuffle: false, crossfade: 0, radio: null },
  clock: { position: 0, duration: 0, at: 0 }, // heard `position` (s) at performance.now() == `at`
  queue: [],
  library: { present: true, mode: "artists", stack: [], query: "", rows: [], all: null, total: 0, seq: 0 },
  dragging: { position: false, volume: false },
  coverKey: null,
};

// MARK: - The WebSocket client

const failure = (code, message) => Object.assign(new Error(message), { code });

const client = {
  socket: null,
  nextId: 1,
  pending: new Map(), // message_id -> {resolve, reject, timer}
  delay: 500,         // the next reconnection's wait (ms): 0.5 s doubling to 5 s
  retry: 0,
  token: "",

  connect() {
    clearTimeout(this.retry);
    if (this.socket) return;
    const socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
    this.socket = socket;
    socket.onopen = () => this.opened();
    socket.onmessage = (e) => this.received(e.data);
    socket.onclose = (e) => this.closed(socket, e.code);
  },

  async opened() {
    try {
      if (this.token) await this.request("auth", { token: this.token });
      this.delay = 500;
      setConnection("open");
      await Promise.all([refresh(), loadLibrary(), loadListens()]);
    } catch { /* unauthorized (the form is shown) or closed meanwhile */ }
  },

  closed(socket, code) {
    if (this.socket !== socket) return;
    this.socket = null;
    for (const { reject, timer } of this.pending.values()) { clearTimeout(timer); reject(failure("disconnected", "disconnected")); }
    this.pending.clear();
    if (code === 4401 || code === 1008 || state.connection === "auth") return askForToken();
    setConnection("down");
    this.retry = setTimeout(() => this.connect(), this.delay);
    this.delay = Math.min(this.delay * 2, 5000);
  },

  received(text) {
    let m;
    try { m = JSON.parse(text); } catch { return; }
    if (m.event) return events[m.event] && events[m.event](m.data || {});
    if (m.error_code === "unauthorized") askForToken();
    const waiting = this.pending.get(m.message_id);
    if (!waiting) return;
    this.pending.delete(m.message_id);
    clearTimeout(waiting.timer);
    if (m.error_code) waiting.reject(failure(m.error_code, m.error || m.error_code));
    else waiting.resolve(m.result);
  },

  // Resolves with the command's result; rejects with an Error whose `code` is the reply's error_code.
  request(command, args = {}) {
    return new Promise((resolve, reject) => {
      if (!this.socket || this.socket.readyState !== WebSocket.OPEN) return reject(failure("disconnected", "not connected"));
      const id = this.nextId++;
      const timer = setTimeout(() => { this.pending.delete(id); reject(failure("timeout", command + ": no answer")); }, 20000);
      this.pending.set(id, { resolve, reject, timer });
      this.socket.send(JSON.stringify({ message_id: id, command, args }));
    });
  },

  // Reconnects at once when waiting is pointless (the network or the tab came back).
  wake() {
    if (state.connection === "down") { this.delay = 500; this.connect(); }
  },
};

// A command from a control: its result, or undefined after showing the error.
function act(command, args) {
  return client.request(command, args).catch((error) => {
    if (error.code !== "disconnected" && error.code !== "unauthorized") notify(error.message);
  });
}

// The token: from the address's #token=… (then kept and removed from the address bar), else the kept one.
function takeToken() {
  const match = location.hash.match(/(?:^#|&)token=([^&]*)/);
  try {
    if (match) client.token = decodeURIComponent(match[1]);
    if (match) history.replaceState(null, "", location.pathname + location.search);
    if (match) localStorage.setItem("harmonia-token", client.token);
    else client.token = localStorage.getItem("harmonia-token") || "";
  } catch { /* no storage (private mode): this page's token only */ }
}

function askForToken() {
  if (state.connection === "auth") return;
  setConnection("auth");
  $("auth").hidden = false;
  $("token").focus();
}

$("auth").addEventListener("submit", (e) => {
  e.preventDefault();
  client.token = $("token").value;
  try { localStorage.setItem("harmonia-token", client.token); } catch { /* kept for this page only */ }
  const old = client.socket;
  client.socket = null;
  if (old) old.close();
  setConnection("connecting");
  client.connect();
});

// MARK: - The player's state

let refreshing = null, refreshAgain = false;
// Reads status and the queue again (queue_changed, a reconnection); calls meanwhile make one more read.
function refresh() {
  if (refreshing) { refreshAgain = true; return refreshing; }
  refreshing = (async () => {
    do {
      refreshAgain = false;
      const [status, items] = await Promise.all([client.request("status"), client.request("queue/items")]);
      applyStatus(status);
      state.queue = items.items || [];
      renderQueue();
    } while (refreshAgain);
  })().catch(() => {}).finally(() => { refreshing = null; });
  return refreshing;
}

function applyStatus(s) {
  const p = state.player, id = (t) => t && t.id;
  const changed = id(p.track) !== id(s.track) || state.coverKey === null;
  Object.assign(p, { volume: s.volume, muted: s.muted, index: s.index, track: s.track, repeat: s.repeat,
                     shuffle: s.shuffle, crossfade: s.crossfade || 0, radio: s.stream_title ? { title: s.stream_title } : null });
  setPlayerState(s.state);
  setClock(s.position, s.duration || 0);
  if (changed) loadCover();
  renderNow();
  renderVolume();
}

const events = {
  state_changed(d) {
    setPlayerState(d.state);
    if (d.error) notify(d.error.message);
    if (d.state === "stopped") refresh();
    renderNow();
  },
  track_started(d) {
    Object.assign(state.player, { index: d.index, track: d.track, radio: null });
    setClock(0, (d.track && d.track.duration) || 0);
    loadCover();
    renderNow();
    renderQueue();
  },
  position(d) { setClock(d.position, d.duration); },
  seeked(d) { setClock(d.position); },
  volume_changed(d) { state.player.volume = d.volume; renderVolume(); },
  queue_changed() { refresh(); },
  settings_changed(d) { applyStatus(d); },
  track_ended() { loadListens(); },
  listen() { loadListens(); },
  // A copy finished or was removed: the queue's offline marks change.
  offline_done() { refresh(); },
  offline_removed() { refresh(); },
  offline_error(d) { notify("Offline copy failed: " + d.message); },
  error(d) { notify(d.message); },
  stream_title(d) { state.player.radio = d; renderNow(); },
};

// MARK: - The heard position, advanced here between position events

function heard() {
  const c = state.clock;
  if (state.player.state !== "playing" || state.connection !== "open") return c.position;
  const now = c.position + (performance.now() - c.at) / 1000;
  return c.duration > 0 ? Math.min(now, c.duration) : now;
}

function freezeClock() {
  state.clock.position = heard();
  state.clock.at = performance.now();
}

function setClock(position, duration) {
  if (typeof position === "number") { state.clock.position = position; state.clock.at = performance.now(); }
  if (typeof duration === "number") state.clock.duration = duration;
  renderTimeline();
}

function setPlayerState(next) {
  freezeClock();
  state.player.state = next;
  tick();
}

// Ten renders a second while playing; none otherwise (nor in a hidden tab: requestAnimationFrame waits).
let ticking = false, lastTick = 0;
function tick() {
  if (ticking) return;
  ticking = true;
  requestAnimationFrame(function frame(now) {
    if (now - lastTick >= 100) { lastTick = now; renderTimeline(); }
    if (state.player.state === "playing" && state.connection === "open") requestAnimationFrame(frame);
    else { ticking = false; renderTimeline(); }
  });
}

// MARK: - Rendering

function setConnection(next) {
  freezeClock(); // the position stands still while offline
  state.connection = next;
  $("connection").textContent = { connecting: "Connecting…", open: "", down: "Offline — reconnecting…",
                                  auth: client.token ? "The token was refused." : "This player needs a token." }[next];
  document.body.classList.toggle("offline", next !== "open");
  if (next !== "auth") $("auth").hidden = true;
  if (next === "open") tick();
}

function formatTime(seconds) {
  const s = seconds > 0 && isFinite(seconds) ? Math.floor(seconds) : 0, h = Math.floor(s / 3600);
  const m = Math.floor(s / 60) % 60, ss = String(s % 60).padStart(2, "0");
  return h ? h + ":" + String(m).padStart(2, "0") + ":" + ss : m + ":" + ss;
}

function fileName(url) {
  const last = String(url || "").split("/").filter(Boolean).pop() || "";
  try { return decodeURIComponent(last).replace(/\.[^.]+$/, ""); } catch { return last; }
}

const trackTitle = (t) => (t ? t.title || fileName(t.url) : "");
const byline = (t) => [t.artist, t.album].filter(Boolean).join(" · ");

function renderNow() {
  const p = state.player, track = p.track, radio = p.radio;
  const title = (radio && (radio.song || radio.title)) || trackTitle(track) || "Nothing playing";
  $("title").textContent = title;
  $("artist").textContent = (radio && radio.artist) || (track && track.artist) || "";
  $("album").textContent = (track && track.album) || "";
  document.title = track ? title + " — Harmonia" : "Harmonia";
  const playing = isPlaying();
  $("toggle").setAttribute("aria-label", playing ? "Pause" : "Play");
  $("toggle-icon").setAttribute("href", playing ? "#i-pause" : "#i-play");
  $("repeat").setAttribute("aria-pressed", String(p.repeat !== "off"));
  $("repeat").title = "Repeat: " + p.repeat;
  $("repeat-one").hidden = p.repeat !== "one";
  $("shuffle").setAttribute("aria-pressed", String(p.shuffle));
  showCrossfade(p.crossfade);
}

// The crossfade's list shows the player's value, added when a client set another one (mpc crossfade 3).
function showCrossfade(seconds) {
  const list = $("crossfade"), value = String(seconds);
  if (![...list.options].some((o) => o.value === value)) list.add(new Option(value + " s", value));
  list.value = value;
}

const isPlaying = () => state.player.state === "playing" || state.player.state === "buffering";

function renderTimeline() {
  const slider = $("position"), fill = $("position-fill"), now = heard(), length = state.clock.duration;
  slider.disabled = !(length > 0);
  slider.max = String(length);
  fill.max = length || 1;
  $("length").textContent = formatTime(length);
  if (state.dragging.position) return;
  slider.value = String(now);
  fill.value = Math.min(now, length);
  $("elapsed").textContent = formatTime(now);
  slider.setAttribute("aria-valuetext", formatTime(now) + " of " + formatTime(length));
}

function renderVolume() {
  const p = state.player;
  if (!state.dragging.volume && !volume.busy) {
    $("volume").value = String(Math.round(p.volume));
    $("volume-fill").value = p.muted ? 0 : p.volume;
    $("volume-value").textContent = String(Math.round(p.volume));
  }
  $("mute").setAttribute("aria-pressed", String(p.muted));
  $("mute-icon").setAttribute("href", p.muted ? "#i-muted" : "#i-volume");
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function icon(name) {
  const ns = "http://www.w3.org/2000/svg", svg = document.createElementNS(ns, "svg"), use = document.createElementNS(ns, "use");
  svg.setAttribute("class", "icon");
  svg.setAttribute("aria-hidden", "true");
  use.setAttribute("href", "#i-" + name);
  svg.append(use);
  return svg;
}

function iconButton(name, label, action, disabled) {
  const button = element("button", "icon-button small");
  button.setAttribute("aria-label", label);
  button.title = label;
  button.dataset.action = action;
  button.disabled = !!disabled;
  button.append(icon(name));
  return button;
}

// A row's middle: a name, a line under it, a duration.
function rowText(node, name, sub, duration) {
  const text = element("span", "text");
  text.append(element("span", "name", name));
  if (sub) text.append(element("span", "sub", sub));
  node.append(text);
  if (duration > 0) node.append(element("span", "duration", formatTime(duration)));
  return node;
}

let queueFocus = null; // {action, index}: where the focus goes after the queue is drawn again
function renderQueue() {
  const list = $("queue"), items = state.queue, current = state.player.index, focused = document.activeElement;
  if (!queueFocus && list.contains(focused)) queueFocus = { action: focused.dataset.action, index: +focused.closest("li").dataset.index };
  list.replaceChildren(...items.map((track, i) => {
    const li = element("li", i === current ? "row current" : "row"), title = trackTitle(track), jump = element("button", "entry");
    li.dataset.index = String(i);
    jump.dataset.action = "jump";
    if (i === current) jump.setAttribute("aria-current", "true");
    jump.append(element("span", "number", String(i + 1)));
    rowText(jump, title, byline(track), track.duration);
    if (track.offline) {
      // Said in words, not only shown: a screen reader reads "Offline copy" with the entry's button.
      li.dataset.offline = "true";
      const saved = element("span", "saved", "Offline copy");
      saved.title = "Plays from the offline copy, without the network";
      jump.append(saved);
    }
    li.append(jump,
              iconButton("up", "Move up " + title, "up", i === 0),
              iconButton("down", "Move down " + title, "down", i === items.length - 1),
              iconButton("remove", "Remove " + title, "remove"));
    return li;
  }));
  $("queue-empty").hidden = items.length > 0;
  $("queue-count").textContent = items.length ? "(" + items.length + ")" : "";
  if (queueFocus && items.length) {
    const li = list.children[Math.min(queueFocus.index, items.length - 1)];
    (li.querySelector('[data-action="' + queueFocus.action + '"]:not(:disabled)') || li.firstChild).focus();
  }
  queueFocus = null;
}

// MARK: - The play history (specs/listens.md): its newest listens, hidden when the player keeps none

let loadingListens = null;
function loadListens() {
  if (loadingListens) return loadingListens;
  loadingListens = client.request("listens/recent", { limit: 10 }).then((r) => {
    const listens = (r && r.listens) || [];
    $("listens").replaceChildren(...listens.map((l) => {
      const when = new Date(l.listened_at * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      return rowText(element("li", "row"), l.title || fileName(l.url), [l.artist, when].filter(Boolean).join(" · "), l.duration);
    }));
    $("listens").hidden = $("listens-heading").hidden = listens.length === 0;
  }).catch(() => { $("listens").hidden = $("listens-heading").hidden = true; })
    .finally(() => { loadingListens = null; });
  return loadingListens;
}

// MARK: - The library

const rootViews = {
  artists: { kind: "artists", title: "Artists" },
  albums: { kind: "albums", title: "Albums" },
  folders: { kind: "folder", path: "", title: "Music folder" },
};

function currentView() {
  const lib = state.library;
  if (lib.query) return { kind: "search", query: lib.query, title: "Results for “" + lib.query + "”" };
  return lib.stack[lib.stack.length - 1] || rootViews[lib.mode];
}

function songRow(song) {
  const title = song.title || fileName(song.uri);
  return { name: title, sub: byline(song), duration: song.duration, add: song.uri, label: title };
}

function songsView(r) {
  return { rows: r.songs.map(songRow), total: r.total, all: r.songs.map((s) => s.uri) };
}

// A page of a view's rows from `offset` (with what opening or adding one
// does), how many rows the view has, and what "Add all" adds. The server
// pages every list (at most 500 rows an answer).
async function fetchView(view, offset) {
  const ask = (command, args) => client.request("library/" + command, Object.assign({ offset }, args));
  switch (view.kind) {
  case "artists": {
    const r = await ask("artists");
    return { total: r.total, rows: r.artists.map((name) => {
      const title = name || "Unknown artist";
      return { name: title, icon: "artist", open: { kind: "albums", artist: name, title } };
    }) };
  }
  case "albums": {
    const r = await ask("albums", view.artist === undefined ? {} : { artist: view.artist });
    return { total: r.total, rows: r.albums.map((a) => {
      const args = a.artist ? { artist: a.artist, album: a.album } : { album: a.album }, title = a.album || "Unknown album";
      return { name: title, icon: "album", sub: view.artist === undefined ? a.artist : "", open: { kind: "songs", args, title }, addSongs: args, label: title };
    }) };
  }
  case "songs":
    return songsView(await ask("songs", view.args));
  case "search":
    return songsView(await ask("search", { query: view.query }));
  default: {
    const r = await ask("browse", { path: view.path });
    const folders = r.folders.map((f) => ({ name: f.name, icon: "folder", open: { kind: "folder", path: f.uri, title: f.name }, add: f.uri }));
    return { rows: folders.concat(r.songs.map(songRow)), total: r.total, all: view.path ? [view.path] : null };
  }
  }
}

async function loadLibrary(focus) {
  const lib = state.library, view = currentView(), seq = ++lib.seq;
  let result = { rows: [] };
  try {
    result = await fetchView(view, 0);
    lib.present = true;
  } catch (error) {
    if (error.code === "disconnected" || error.code === "unauthorized") return; // read again once connected
    if (error.code === "unsupported" || error.code === "unknownCommand") lib.present = false;
    else if (seq === lib.seq) notify(error.message);
  }
  if (seq !== lib.seq) return;
  Object.assign(lib, { rows: result.rows, all: result.all || null, total: result.total || 0 });
  renderLibrary(view);
  if (focus) $("place").focus();
}

function renderLibrary(view) {
  const lib = state.library, rows = lib.rows;
  document.body.classList.toggle("no-library", !lib.present);
  for (const b of document.querySelectorAll(".mode")) b.setAttribute("aria-pressed", String(!lib.query && b.dataset.mode === lib.mode));
  $("place").textContent = view.title;
  $("back").hidden = !!lib.query || !lib.stack.length;
  $("add-all").hidden = !(lib.all && lib.all.length);
  $("browse").replaceChildren(...rows.map(rowElement));
  renderBrowseNote();
}

function rowElement(row, i) {
  const li = element("li", "row"), entry = element(row.open ? "button" : "span", "entry");
  li.dataset.index = String(i);
  entry.dataset.action = "open";
  entry.append(icon(row.icon || "note"));
  rowText(entry, row.name, row.sub, row.duration);
  if (row.open) entry.append(icon("open"));
  li.append(entry);
  if (row.add || row.addSongs) li.append(iconButton("add", "Add " + (row.label || row.name), "add"));
  return li;
}

// Under the list: how much of it is shown; seen on screen, it loads the next page.
function renderBrowseNote() {
  const lib = state.library, rows = lib.rows, note = $("browse-note");
  note.hidden = rows.length > 0 && !(lib.total > rows.length);
  note.textContent = rows.length ? "Showing " + rows.length + " of " + lib.total + "…" : lib.query ? "No songs match." : "Nothing here.";
}

// The next page of the view, appended (only its rows are drawn).
async function loadMore() {
  const lib = state.library, view = currentView(), seq = lib.seq;
  if (lib.loadingMore || !(lib.total > lib.rows.length)) return;
  lib.loadingMore = true;
  try {
    const result = await fetchView(view, lib.rows.length);
    if (seq !== lib.seq || !result.rows.length) return;
    const first = lib.rows.length;
    lib.rows = lib.rows.concat(result.rows);
    if (result.all && lib.all && view.kind !== "folder") lib.all = lib.all.concat(result.all);
    lib.total = result.total || lib.total;
    $("browse").append(...result.rows.map((row, i) => rowElement(row, first + i)));
    renderBrowseNote();
  } catch (error) {
    if (error.code !== "disconnected" && error.code !== "unauthorized") notify(error.message);
  } finally {
    lib.loadingMore = false;
  }
}

if (typeof IntersectionObserver === "function") {
  new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) loadMore(); }).observe($("browse-note"));
}

// Appends uris to the queue, in order.
async function addUris(uris, label) {
  for (const uri of uris) if (await act("queue/add", { uri }) === undefined) return;
  notify(uris.length === 1 ? "Added “" + label + "”." : "Added " + uris.length + " items.");
}

async function addRow(row) {
  if (row.add) return addUris([row.add], row.label || row.name);
  const r = await act("library/songs", row.addSongs);
  if (r) addUris(r.songs.map((s) => s.uri), row.label);
}

// MARK: - Controls

function notify(text) {
  const line = $("notice");
  line.textContent = text;
  line.hidden = false;
  clearTimeout(notify.timer);
  notify.timer = setTimeout(() => { line.hidden = true; }, 4000);
}

// The volume: the newest level goes out once the previous request is answered.
const volume = { want: null, busy: false };
async function sendVolume(level) {
  volume.want = level;
  if (volume.busy) return;
  volume.busy = true;
  while (volume.want !== null) {
    const level = volume.want;
    volume.want = null;
    const r = await act("volume", { level });
    if (r) Object.assign(state.player, { volume: r.volume, muted: r.muted });
  }
  volume.busy = false;
  renderVolume();
}

function seek(position) {
  setClock(position);
  act("seek", { position }).then((r) => r && setClock(r.position));
}

const on = (id, type, handler) => $(id).addEventListener(type, handler);
const press = (id, handler) => on(id, "click", handler);
const modeResult = (r) => { if (r) { Object.assign(state.player, r); renderNow(); renderVolume(); } };

press("toggle", () => act(isPlaying() ? "pause" : "play"));
press("next", () => act("next"));
press("previous", () => act("previous"));
press("repeat", () => act("repeat", { mode: { off: "all", all: "one" }[state.player.repeat] || "off" }).then(modeResult));
press("shuffle", () => act("shuffle", { enabled: !state.player.shuffle }).then(modeResult));
on("crossfade", "change", () => act("set_crossfade", { seconds: Number($("crossfade").value) }).then(modeResult));
press("mute", () => act("mute", { enabled: !state.player.muted }).then(modeResult));
press("clear", () => { if (state.queue.length && confirm("Remove every song from the queue?")) act("queue/clear"); });

// Sliders: while a pointer holds one, the player's updates leave it alone.
for (const name of ["position", "volume"]) on(name, "pointerdown", () => { state.dragging[name] = true; });
for (const type of ["pointerup", "pointercancel"]) addEventListener(type, () => { state.dragging.position = state.dragging.volume = false; });

on("position", "input", (e) => {
  $("elapsed").textContent = formatTime(+e.target.value);
  $("position-fill").value = +e.target.value;
});
on("position", "change", (e) => { state.dragging.position = false; seek(+e.target.value); });
// Arrow keys seek by 5 s, Page keys by 30 s (the native steps are too fine).
on("position", "keydown", (e) => {
  const step = { ArrowLeft: -5, ArrowDown: -5, ArrowRight: 5, ArrowUp: 5, PageDown: -30, PageUp: 30 }[e.key];
  if (!step) return;
  e.preventDefault();
  seek(Math.max(0, Math.min(state.clock.duration, heard() + step)));
});

on("volume", "input", (e) => {
  $("volume-fill").value = +e.target.value;
  $("volume-value").textContent = e.target.value;
  sendVolume(+e.target.value);
});
on("volume", "change", (e) => { state.dragging.volume = false; sendVolume(+e.target.value); });

press("queue", async (e) => {
  const button = e.target.closest("button");
  if (!button) return;
  const index = +button.closest("li").dataset.index, action = button.dataset.action;
  if (action === "jump") {
    if (await act("jump", { index }) !== undefined && !isPlaying()) act("play");
  } else if (action === "remove") {
    queueFocus = { action, index };
    act("queue/remove", { index });
  } else {
    const to = index + (action === "up" ? -1 : 1);
    queueFocus = { action, index: to };
    act("queue/move", { from: index, to });
  }
});

press("browse", (e) => {
  const button = e.target.closest("button"), row = button && state.library.rows[+button.closest("li").dataset.index];
  if (!row) return;
  if (button.dataset.action === "add") return addRow(row);
  state.library.stack.push(row.open);
  loadLibrary(true);
});

press("back", () => { state.library.stack.pop(); loadLibrary(true); });
press("add-all", () => state.library.all && addUris(state.library.all, $("place").textContent));

for (const button of document.querySelectorAll(".mode")) {
  button.addEventListener("click", () => {
    Object.assign(state.library, { mode: button.dataset.mode, stack: [], query: "" });
    $("search").value = "";
    loadLibrary();
  });
}

// Search as you type (after a pause) and at once on Enter.
let searchTimer = 0;
function search() {
  clearTimeout(searchTimer);
  const query = $("search").value.trim();
  if (query === state.library.query) return;
  state.library.query = query;
  loadLibrary();
}
on("search", "input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(search, 250); });
on("search", "keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); search(); } });

// Phone-sized screens show one panel at a time (remote.css); the tabs pick it.
for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => {
    for (const t of document.querySelectorAll(".tab")) t.setAttribute("aria-pressed", String(t === tab));
    document.body.classList.remove("view-now", "view-queue", "view-library");
    document.body.classList.add("view-" + tab.dataset.view);
  });
}

// MARK: - The cover

async function loadCover() {
  const track = state.player.track, key = track ? track.id : "", img = $("cover");
  state.coverKey = key;
  let source = null;
  if (track && /^https?:\/\//i.test(track.artworkUrl || "")) {
    source = track.artworkUrl;  // a cover given by URL (a UPnP control point's)
  } else if (track) {
    try {
      const r = await client.request("cover");
      source = "data:" + r.mime + ";base64," + r.data;
    } catch { /* no cover (notFound) or none readable: the placeholder */ }
  }
  if (state.coverKey !== key) return;
  if (source) img.src = source; else img.removeAttribute("src");
  img.hidden = !source;
  $("cover-placeholder").classList.toggle("hidden", !!source);
}

addEventListener("online", () => client.wake());
document.addEventListener("visibilitychange", () => document.hidden || client.wake());

takeToken();
renderNow();
renderVolume();
renderTimeline();
client.connect();
