// The web remote: drives harmonia-play through the JSON control protocol over
// WebSocket (specs/control-protocol.md). One state object, one render per
// region, one client matching replies to requests by message_id.
"use strict";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "harmonia-token";

const state = {
  connection: "connecting", // connecting | open | down | auth
  player: { state: "stopped", volume: 100, muted: false, index: null, track: null, count: 0,
            repeat: "off", shuffle: false, streamTitle: null },
  // The heard position: `position` seconds at performance.now() == `at`.
  clock: { position: 0, duration: 0, at: 0 },
  queue: [],
  hasLibrary: true,
  library: { mode: "artists", stack: [], query: "", rows: [], seq: 0 },
  dragging: { position: false, volume: false },
  coverKey: null,
  view: "now",
};

// MARK: - The WebSocket client

const client = {
  socket: null,
  nextId: 1,
  pending: new Map(),   // message_id -> {resolve, reject, timer}
  delay: 500,           // the next reconnection's wait (ms): 0.5 s doubling to 5 s
  retry: 0,

  url() {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
  },

  connect() {
    clearTimeout(this.retry);
    if (this.socket) return;
    const socket = new WebSocket(this.url());
    this.socket = socket;
    socket.onopen = () => this.opened();
    socket.onmessage = (e) => this.received(e.data);
    socket.onclose = (e) => this.closed(socket, e.code);
  },

  async opened() {
    try {
      const token = loadToken();
      if (token) await this.request("auth", { token });
      this.delay = 500;
      setConnection("open");
      await reload();
    } catch (error) {
      if (error.code === "unauthorized") askForToken();
    }
  },

  closed(socket, code) {
    if (this.socket !== socket) return;
    this.socket = null;
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(Object.assign(new Error("disconnected"), { code: "disconnected" }));
    }
    this.pending.clear();
    if (code === 4401 || code === 1008 || state.connection === "auth") return askForToken();
    setConnection("down");
    this.retry = setTimeout(() => this.connect(), this.delay);
    this.delay = Math.min(this.delay * 2, 5000);
  },

  received(text) {
    let message;
    try { message = JSON.parse(text); } catch { return; }
    if (message.event) return handleEvent(message.event, message.data || {});
    const waiting = this.pending.get(message.message_id);
    if (!waiting) return;
    this.pending.delete(message.message_id);
    clearTimeout(waiting.timer);
    if (message.error_code) {
      waiting.reject(Object.assign(new Error(message.error || message.error_code), { code: message.error_code }));
    } else {
      waiting.resolve(message.result);
    }
  },

  // Sends a command; resolves with its result, rejects with an Error whose `code` is the error_code.
  request(command, args = {}) {
    return new Promise((resolve, reject) => {
      if (!this.socket || this.socket.readyState !== WebSocket.OPEN) {
        return reject(Object.assign(new Error("not connected"), { code: "disconnected" }));
      }
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(Object.assign(new Error(command + ": no answer"), { code: "timeout" }));
      }, 20000);
      this.pending.set(id, { resolve, reject, timer });
      this.socket.send(JSON.stringify({ message_id: id, command, args }));
    });
  },

  // Reconnects at once when the wait is pointless (the network or the tab came back).
  wake() {
    if (state.connection === "down" && !this.socket) { this.delay = 500; this.connect(); }
  },
};

// A command from a control: errors are shown, never thrown.
function act(command, args) {
  return client.request(command, args).catch((error) => {
    if (error.code === "unauthorized") askForToken();
    else if (error.code !== "disconnected") notify(error.message);
    return undefined;
  });
}

function loadToken() {
  try {
    const match = location.hash.match(/(?:^#|&)token=([^&]*)/);
    if (match) {
      localStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
    return localStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

function askForToken() {
  setConnection("auth");
  const form = $("auth");
  form.hidden = false;
  $("token").focus();
}

$("auth").addEventListener("submit", (event) => {
  event.preventDefault();
  try { localStorage.setItem(TOKEN_KEY, $("token").value); } catch { /* private mode: this session only */ }
  $("auth").hidden = true;
  if (client.socket) client.socket.close();
  client.socket = null;
  setConnection("connecting");
  client.connect();
});

// MARK: - State from the player

async function reload() {
  await Promise.all([refresh(), loadLibrary()]);
}

let refreshing = null, refreshAgain = false;
// Reads status and the queue again (after queue_changed, a reconnection); calls made meanwhile coalesce.
async function refresh() {
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
  const p = state.player;
  const trackChanged = (p.track && p.track.id) !== (s.track && s.track.id);
  Object.assign(p, { volume: s.volume, muted: s.muted, index: s.index, track: s.track, count: s.count,
                     repeat: s.repeat, shuffle: s.shuffle, streamTitle: s.stream_title ? { title: s.stream_title } : null });
  setPlayerState(s.state);
  setClock(s.position, s.duration);
  if (trackChanged || state.coverKey === null) loadCover();
  renderNow();
  renderVolume();
}

const events = {
  state_changed(d) {
    setPlayerState(d.state);
    if (d.state === "error" && d.error) notify(d.error.message);
    if (d.state === "stopped") refresh();
    renderNow();
  },
  track_started(d) {
    Object.assign(state.player, { index: d.index, track: d.track, streamTitle: null });
    setClock(0, d.track && d.track.duration);
    loadCover();
    renderNow();
    renderQueue();
  },
  position(d) { setClock(d.position, d.duration); },
  seeked(d) { setClock(d.position); },
  volume_changed(d) { state.player.volume = d.volume; renderVolume(); },
  queue_changed() { refresh(); },
  error(d) { notify(d.message); },
  stream_title(d) { state.player.streamTitle = d; renderNow(); },
};

function handleEvent(name, data) {
  if (events[name]) events[name](data);
}

// MARK: - The heard position, advanced locally between position events

function heard() {
  const c = state.clock;
  if (state.player.state !== "playing" || state.connection !== "open") return c.position;
  const now = c.position + (performance.now() - c.at) / 1000;
  return c.duration > 0 ? Math.min(now, c.duration) : now;
}

function setClock(position, duration) {
  const c = state.clock;
  if (typeof position === "number") { c.position = position; c.at = performance.now(); }
  if (typeof duration === "number") c.duration = duration;
  renderTimeline();
}

function setPlayerState(next) {
  const c = state.clock;
  c.position = heard();
  c.at = performance.now();
  state.player.state = next;
  tick();
}

let ticking = false;
function tick() {
  if (ticking || state.player.state !== "playing") return;
  ticking = true;
  requestAnimationFrame(function frame() {
    renderTimeline();
    if (state.player.state === "playing" && state.connection === "open") requestAnimationFrame(frame);
    else ticking = false;
  });
}

// MARK: - Rendering

function setConnection(next) {
  const c = state.clock;
  c.position = heard(); // frozen while offline
  c.at = performance.now();
  state.connection = next;
  const line = $("connection");
  line.textContent = { connecting: "Connecting…", open: "", down: "Offline — reconnecting…",
                       auth: "This player needs a token." }[next];
  document.body.classList.toggle("offline", next !== "open");
  if (next === "open") { $("auth").hidden = true; tick(); }
}

function formatTime(seconds) {
  if (!(seconds >= 0) || !isFinite(seconds)) return "0:00";
  const s = Math.floor(seconds), h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60;
  const mmss = (h ? String(m).padStart(2, "0") : m) + ":" + String(s % 60).padStart(2, "0");
  return h ? h + ":" + mmss : mmss;
}

function fileName(url) {
  const last = String(url || "").split("/").filter(Boolean).pop() || "";
  try { return decodeURIComponent(last).replace(/\.[^.]+$/, ""); } catch { return last; }
}

function trackTitle(track) { return track ? track.title || fileName(track.url) : ""; }

function renderNow() {
  const p = state.player, track = p.track, radio = p.streamTitle;
  const title = radio && (radio.song || radio.title) || trackTitle(track) || "Nothing playing";
  $("title").textContent = title;
  $("artist").textContent = (radio && radio.artist) || (track && track.artist) || "";
  $("album").textContent = (track && track.album) || "";
  document.title = track ? title + " — Harmonia" : "Harmonia";
  const playing = p.state === "playing" || p.state === "buffering";
  $("toggle").setAttribute("aria-label", playing ? "Pause" : "Play");
  $("toggle-icon").setAttribute("href", playing ? "#i-pause" : "#i-play");
  $("repeat").setAttribute("aria-pressed", String(p.repeat !== "off"));
  $("repeat").title = "Repeat: " + p.repeat;
  $("repeat-one").hidden = p.repeat !== "one";
  $("shuffle").setAttribute("aria-pressed", String(p.shuffle));
  document.body.classList.toggle("playing", playing);
}

let shownSecond = -1;
function renderTimeline() {
  const c = state.clock, slider = $("position"), fill = $("position-fill");
  const now = heard(), length = c.duration > 0 ? c.duration : 0;
  slider.disabled = !(length > 0);
  slider.max = String(length);
  fill.max = length || 1;
  if (!state.dragging.position) {
    slider.value = String(now);
    fill.value = Math.min(now, length);
    const second = Math.floor(now);
    if (second !== shownSecond || $("length").textContent !== formatTime(length)) {
      shownSecond = second;
      $("elapsed").textContent = formatTime(now);
      $("length").textContent = formatTime(length);
      slider.setAttribute("aria-valuetext", formatTime(now) + " of " + formatTime(length));
    }
  }
}

function renderVolume() {
  const p = state.player;
  if (!state.dragging.volume && !volume.busy) {
    $("volume").value = String(Math.round(p.volume));
    $("volume-fill").value = p.muted ? 0 : p.volume;
    $("volume-value").textContent = String(Math.round(p.volume));
  }
  $("mute").setAttribute("aria-pressed", String(p.muted));
  $("mute").setAttribute("aria-label", p.muted ? "Unmute" : "Mute");
  $("mute-icon").setAttribute("href", p.muted ? "#i-muted" : "#i-volume");
}

function icon(name) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "icon");
  svg.setAttribute("aria-hidden", "true");
  const use = document.createElementNS("http://www.w3.org/2000/svg", "use");
  use.setAttribute("href", "#i-" + name);
  svg.append(use);
  return svg;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
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

// The labelled middle of a row: a name, a line under it, a duration.
function rowText(node, name, sub, duration) {
  const text = element("span", "text");
  text.append(element("span", "name", name));
  if (sub) text.append(element("span", "sub", sub));
  node.append(text);
  if (duration > 0) node.append(element("span", "duration", formatTime(duration)));
  return node;
}

let queueFocus = null; // {action, index}: where focus goes after the next queue render
function renderQueue() {
  const list = $("queue"), items = state.queue, current = state.player.index;
  if (!queueFocus && list.contains(document.activeElement)) {
    const li = document.activeElement.closest("li");
    if (li) queueFocus = { action: document.activeElement.dataset.action, index: Number(li.dataset.index) };
  }
  const rows = items.map((track, i) => {
    const li = element("li", "row" + (i === current ? " current" : ""));
    li.dataset.index = String(i);
    const title = trackTitle(track);
    const jump = element("button", "entry");
    jump.dataset.action = "jump";
    if (i === current) jump.setAttribute("aria-current", "true");
    jump.append(element("span", "number", String(i + 1)));
    rowText(jump, title, [track.artist, track.album].filter(Boolean).join(" · "), track.duration);
    li.append(jump,
              iconButton("up", "Move up " + title, "up", i === 0),
              iconButton("down", "Move down " + title, "down", i === items.length - 1),
              iconButton("remove", "Remove " + title, "remove"));
    return li;
  });
  list.replaceChildren(...rows);
  $("queue-empty").hidden = items.length > 0;
  $("queue-count").textContent = items.length ? "(" + items.length + ")" : "";
  if (queueFocus && items.length) {
    const li = list.children[Math.min(queueFocus.index, items.length - 1)];
    const target = li.querySelector('[data-action="' + queueFocus.action + '"]:not(:disabled)') || li.querySelector(".entry");
    target.focus();
  }
  queueFocus = null;
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
  return { name: title, sub: [song.artist, song.album].filter(Boolean).join(" · "), duration: song.duration,
           add: { uri: song.uri, label: title }, icon: "note" };
}

// The rows of a view, and what "Add all" adds (a list of uris), from the library commands.
async function fetchView(view) {
  switch (view.kind) {
  case "artists": {
    const r = await client.request("library/artists");
    return { rows: r.artists.map((name) => ({ name: name || "Unknown artist", open: { kind: "albums", artist: name, title: name || "Unknown artist" } })) };
  }
  case "albums": {
    const r = await client.request("library/albums", view.artist === undefined ? {} : { artist: view.artist });
    return { rows: r.albums.map((a) => {
      const args = a.artist ? { artist: a.artist, album: a.album } : { album: a.album };
      return { name: a.album || "Unknown album", sub: view.artist === undefined ? a.artist : "",
               open: { kind: "songs", args, title: a.album || "Unknown album" }, addSongs: args, label: a.album };
    }) };
  }
  case "songs": {
    const r = await client.request("library/songs", view.args);
    return { rows: r.songs.map(songRow), total: r.total, all: r.songs.map((s) => s.uri) };
  }
  case "folder": {
    const r = await client.request("library/browse", { path: view.path });
    const folders = r.folders.map((f) => ({ name: f.name, icon: "folder", open: { kind: "folder", path: f.uri, title: f.name },
                                            add: { uri: f.uri, label: f.name } }));
    return { rows: folders.concat(r.songs.map(songRow)), all: view.path ? [view.path] : null };
  }
  case "search": {
    const r = await client.request("library/search", { query: view.query });
    return { rows: r.songs.map(songRow), total: r.total, all: r.songs.map((s) => s.uri) };
  }
  }
  return { rows: [] };
}

async function loadLibrary(focus) {
  const lib = state.library, view = currentView(), seq = ++lib.seq;
  try {
    const result = await fetchView(view);
    if (seq !== lib.seq) return;
    state.hasLibrary = true;
    Object.assign(lib, { rows: result.rows, all: result.all || null, total: result.total });
  } catch (error) {
    if (seq !== lib.seq) return;
    if (error.code === "unsupported" || error.code === "unknownCommand") state.hasLibrary = false;
    else if (error.code !== "disconnected" && error.code !== "unauthorized") notify(error.message);
    Object.assign(lib, { rows: [], all: null, total: undefined });
  }
  renderLibrary(view);
  if (focus) $("place").focus();
}

function renderLibrary(view) {
  const lib = state.library;
  document.body.classList.toggle("no-library", !state.hasLibrary);
  $("no-library").hidden = state.hasLibrary;
  for (const b of document.querySelectorAll(".mode")) b.setAttribute("aria-pressed", String(!lib.query && b.dataset.mode === lib.mode));
  $("place").textContent = view.title;
  $("back").hidden = !!lib.query || lib.stack.length === 0;
  $("add-all").hidden = !(lib.all && lib.all.length);
  const rows = lib.rows.map((row, i) => {
    const li = element("li", "row");
    li.dataset.index = String(i);
    if (row.open) {
      const open = element("button", "entry");
      open.dataset.action = "open";
      if (row.icon) open.append(icon(row.icon));
      rowText(open, row.name, row.sub, row.duration).append(icon("open"));
      li.append(open);
    } else {
      const text = element("span", "entry static");
      text.append(icon(row.icon || "note"));
      li.append(rowText(text, row.name, row.sub, row.duration));
    }
    if (row.add || row.addSongs) li.append(iconButton("add", "Add " + (row.label || row.name), "add"));
    return li;
  });
  $("browse").replaceChildren(...rows);
  const note = $("browse-note");
  note.hidden = rows.length > 0 && !(lib.total > rows.length);
  note.textContent = rows.length === 0 ? (lib.query ? "No songs match." : "Nothing here.")
                                       : "Showing " + rows.length + " of " + lib.total + " songs.";
}

// Appends uris to the queue in order.
async function addUris(uris, label) {
  for (const uri of uris) if (await act("queue/add", { uri }) === undefined) return;
  notify(uris.length === 1 ? "Added “" + label + "”." : "Added " + uris.length + " items.");
}

async function addRow(row) {
  if (row.add) return addUris([row.add.uri], row.add.label);
  const r = await act("library/songs", row.addSongs);
  if (r) addUris(r.songs.map((s) => s.uri), row.label);
}

// MARK: - Controls

function notify(text) {
  const line = $("notice");
  line.textContent = text;
  line.hidden = false;
  clearTimeout(notify.timer);
  notify.timer = setTimeout(() => { line.hidden = true; }, 5000);
}

// The volume: the newest level is sent once the previous request is answered.
const volume = { want: null, busy: false };
async function sendVolume(level) {
  volume.want = level;
  if (volume.busy) return;
  volume.busy = true;
  while (volume.want !== null) {
    const next = volume.want;
    volume.want = null;
    const r = await act("volume", { level: next });
    if (r) Object.assign(state.player, { volume: r.volume, muted: r.muted });
  }
  volume.busy = false;
  renderVolume();
}

function seek(position) {
  setClock(position);
  act("seek", { position }).then((r) => { if (r) setClock(r.position); });
}

function press(id, handler) { $(id).addEventListener("click", handler); }

press("toggle", () => act(state.player.state === "playing" ? "pause" : "play"));
press("next", () => act("next"));
press("previous", () => act("previous"));
press("repeat", () => act("repeat", { mode: { off: "all", all: "one", one: "off" }[state.player.repeat] || "off" })
  .then((r) => { if (r) { state.player.repeat = r.repeat; renderNow(); } }));
press("shuffle", () => act("shuffle", { enabled: !state.player.shuffle })
  .then((r) => { if (r) { state.player.shuffle = r.shuffle; renderNow(); } }));
press("mute", () => act("mute", { enabled: !state.player.muted })
  .then((r) => { if (r) { Object.assign(state.player, { volume: r.volume, muted: r.muted }); renderVolume(); } }));
press("clear", () => { if (state.queue.length && confirm("Remove every song from the queue?")) act("queue/clear"); });

// Sliders: while a pointer holds one, the player's updates do not move it.
for (const name of ["position", "volume"]) {
  $(name).addEventListener("pointerdown", () => { state.dragging[name] = true; });
}
addEventListener("pointerup", () => { state.dragging.position = state.dragging.volume = false; });
addEventListener("pointercancel", () => { state.dragging.position = state.dragging.volume = false; });

$("position").addEventListener("input", (e) => {
  $("elapsed").textContent = formatTime(Number(e.target.value));
  $("position-fill").value = Number(e.target.value);
});
$("position").addEventListener("change", (e) => {
  state.dragging.position = false;
  seek(Number(e.target.value));
});
// Arrow keys seek by 5 s, Page keys by 30 s (the native 1 s steps are too fine).
$("position").addEventListener("keydown", (e) => {
  const steps = { ArrowLeft: -5, ArrowDown: -5, ArrowRight: 5, ArrowUp: 5, PageDown: -30, PageUp: 30 };
  if (!(e.key in steps)) return;
  e.preventDefault();
  const length = state.clock.duration;
  seek(Math.max(0, Math.min(length, heard() + steps[e.key])));
});

$("volume").addEventListener("input", (e) => {
  const level = Number(e.target.value);
  $("volume-fill").value = level;
  $("volume-value").textContent = String(level);
  sendVolume(level);
});
$("volume").addEventListener("change", (e) => {
  state.dragging.volume = false;
  sendVolume(Number(e.target.value));
});

$("queue").addEventListener("click", async (e) => {
  const button = e.target.closest("button");
  if (!button) return;
  const index = Number(button.closest("li").dataset.index), action = button.dataset.action;
  if (action === "jump") {
    if (await act("jump", { index }) !== undefined && state.player.state !== "playing") act("play");
  } else if (action === "up" || action === "down") {
    const to = index + (action === "up" ? -1 : 1);
    queueFocus = { action, index: to };
    act("queue/move", { from: index, to });
  } else if (action === "remove") {
    queueFocus = { action, index };
    act("queue/remove", { index });
  }
});

$("browse").addEventListener("click", (e) => {
  const button = e.target.closest("button");
  if (!button) return;
  const row = state.library.rows[Number(button.closest("li").dataset.index)];
  if (!row) return;
  if (button.dataset.action === "open") {
    state.library.stack.push(row.open);
    loadLibrary(true);
  } else if (button.dataset.action === "add") {
    addRow(row);
  }
});

press("back", () => { state.library.stack.pop(); loadLibrary(true); });
press("add-all", () => { if (state.library.all) addUris(state.library.all, $("place").textContent); });

for (const button of document.querySelectorAll(".mode")) {
  button.addEventListener("click", () => {
    const lib = state.library;
    Object.assign(lib, { mode: button.dataset.mode, stack: [], query: "" });
    $("search").value = "";
    loadLibrary();
  });
}

// Search as you type (debounced) and at once on Enter.
let searchTimer = 0;
function search() {
  clearTimeout(searchTimer);
  const query = $("search").value.trim();
  if (query === state.library.query) return;
  state.library.query = query;
  loadLibrary();
}
$("search").addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(search, 250); });
$("search").addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); search(); } });

// Phone-sized screens show one panel at a time.
for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => {
    state.view = tab.dataset.view;
    for (const t of document.querySelectorAll(".tab")) t.setAttribute("aria-pressed", String(t === tab));
    document.body.classList.remove("view-now", "view-queue", "view-library");
    document.body.classList.add("view-" + state.view);
  });
}

// MARK: - The cover

async function loadCover() {
  const track = state.player.track, key = track ? track.id : "";
  state.coverKey = key;
  const img = $("cover");
  let source = null;
  if (track) {
    try {
      const r = await client.request("cover");
      source = "data:" + r.mime + ";base64," + r.data;
    } catch { /* no cover (notFound), or none readable: the placeholder */ }
  }
  if (state.coverKey !== key) return;
  if (source) img.src = source; else img.removeAttribute("src");
  img.hidden = !source;
  $("cover-placeholder").classList.toggle("hidden", !!source);
}

addEventListener("online", () => client.wake());
document.addEventListener("visibilitychange", () => { if (!document.hidden) client.wake(); });

renderNow();
renderVolume();
renderTimeline();
client.connect();
