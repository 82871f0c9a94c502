// uffs's web page: search as you type against /api/search (stale answers dropped), sortable columns, paging,
// keyboard selection; a disk usage treemap from /api/du. The token comes from the page's address once and is
// sent as an Authorization header. window.uffsTimings records, for each answer shown, the milliseconds from the
// event that asked for it (a keystroke, a sort, a page) to its rows being on screen.
"use strict";
(function () {
  const TOKEN = new URL(location.href).searchParams.get("token") || "";
  const PAGE = 100;
  const COLUMNS = "name,path,size,modified,kind";
  const $ = (id) => document.getElementById(id);
  const q = $("q"), tbody = document.querySelector("#results tbody"), count = $("count"), err = $("error");
  window.uffsTimings = [];

  const st = { q: "", sort: "", reverse: false, offset: 0, found: 0, rows: [], sel: -1 };
  let seq = 0, ctrl = null, timer = 0;

  function api(path, params, signal) {
    const u = path + "?" + new URLSearchParams(params).toString();
    return fetch(u, { headers: { Authorization: "Bearer " + TOKEN }, signal, cache: "no-store" })
      .then((r) => r.json().catch(() => ({ error: r.status + " " + r.statusText })).then((b) => [r, b]));
  }

  // ---- formatting
  const nf = new Intl.NumberFormat();
  function human(n) {
    if (n == null) return "";
    if (n < 1024) return n + " B";
    const u = ["KB", "MB", "GB", "TB", "PB"];
    let v = n / 1024, i = 0;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (v < 10 ? v.toFixed(1) : Math.round(v)) + " " + u[i];
  }
  function date(s) {
    if (!s) return "";
    // The index's times have 100 ns digits; Date takes milliseconds.
    const d = new Date(s.replace(/(\.\d{3})\d*/, "$1"));
    if (isNaN(d)) return s;
    const p = (x) => String(x).padStart(2, "0");
    return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + " " + p(d.getHours()) + ":" + p(d.getMinutes());
  }
  function folderOf(path, name) {
    const f = path.slice(0, Math.max(0, path.length - name.length));
    return f.length > 1 ? f.replace(/[\\/]$/, "") : f;
  }

  // ---- search
  function schedule(kind) {
    const at = performance.now();
    clearTimeout(timer);
    timer = setTimeout(() => search(kind, at), kind === "type" ? 20 : 0);
  }

  // The view's state lives in the address's fragment (never sent to the server), so a reload keeps it.
  function remember() {
    const h = new URLSearchParams();
    if (view === "du") { h.set("view", "du"); if (du.path) h.set("path", du.path); }
    else {
      if (st.q) h.set("q", st.q);
      if (st.sort) { h.set("sort", st.sort); if (st.reverse) h.set("reverse", "1"); }
      if (st.offset) h.set("offset", st.offset);
    }
    history.replaceState(null, "", location.pathname + location.search + (h.toString() ? "#" + h : ""));
  }

  async function search(kind, at) {
    const my = ++seq;
    if (ctrl) ctrl.abort();
    ctrl = new AbortController();
    const params = { q: st.q, offset: st.offset, limit: PAGE, columns: COLUMNS };
    if (st.sort) { params.sort = st.sort; params.reverse = st.reverse ? "true" : "false"; }
    document.body.classList.add("loading");
    let r, b;
    try {
      [r, b] = await api("/api/search", params, ctrl.signal);
    } catch (e) {
      if (e.name === "AbortError") return;
      if (my === seq) showError("cannot reach the server: " + e.message);
      return;
    }
    if (my !== seq) return; // a newer request was made: this answer is stale
    document.body.classList.remove("loading");
    if (!r.ok) { showError(b.error || r.status + " " + r.statusText); return; }
    err.hidden = true;
    remember();
    st.found = b.found;
    st.rows = b.rows;
    render();
    const query = st.q;
    requestAnimationFrame(() => setTimeout(() => {
      window.uffsTimings.push({ kind, query, ms: performance.now() - at, rows: b.rows.length, found: b.found });
      if (window.uffsTimings.length > 1000) window.uffsTimings.shift();
    }, 0));
  }

  function showError(msg) {
    document.body.classList.remove("loading");
    err.textContent = msg;
    err.hidden = false;
    st.rows = []; st.found = 0;
    tbody.textContent = "";
    count.textContent = "error";
    pager();
  }

  function render() {
    const frag = document.createDocumentFragment();
    st.rows.forEach((row, i) => {
      const tr = document.createElement("tr");
      tr.className = row.kind === "folder" ? "dir" : row.kind === "stream" ? "stream" : "file";
      tr.dataset.path = row.path;
      tr.dataset.i = i;
      const td = (cls, text, title) => {
        const c = document.createElement("td");
        c.className = cls; c.textContent = text;
        if (title) c.title = title;
        tr.appendChild(c);
        return c;
      };
      td("c-name", row.name, row.name);
      td("c-path", folderOf(row.path, row.name), row.path);
      if (row.kind === "folder") td("c-size num dim", "folder");
      else td("c-size num", human(row.size), nf.format(row.size) + " bytes");
      td("c-date", date(row.modified), row.modified);
      frag.appendChild(tr);
    });
    tbody.textContent = "";
    tbody.appendChild(frag);
    st.sel = st.rows.length ? 0 : -1;
    select(st.sel, false);
    count.textContent = nf.format(st.found) + (st.found === 1 ? " match" : " matches");
    pager();
    main().scrollTop = 0;
  }

  function pager() {
    const from = st.rows.length ? st.offset + 1 : 0, to = st.offset + st.rows.length;
    $("pageinfo").textContent = st.rows.length ? nf.format(from) + "–" + nf.format(to) + " of " + nf.format(st.found) : "";
    $("prev").disabled = st.offset === 0;
    $("next").disabled = to >= st.found;
  }
  const main = () => document.querySelector("main");

  function page(delta) {
    const o = st.offset + delta * PAGE;
    if (o < 0 || o >= st.found) return;
    st.offset = o;
    schedule("page");
  }

  function select(i, scroll = true) {
    const rows = tbody.children;
    if (st.sel >= 0 && rows[st.sel]) rows[st.sel].classList.remove("sel");
    st.sel = i;
    if (i >= 0 && rows[i]) {
      rows[i].classList.add("sel");
      if (scroll) rows[i].scrollIntoView({ block: "nearest" });
    }
  }

  async function copy(text) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (_) {
      const t = document.createElement("textarea");
      t.value = text; document.body.appendChild(t); t.select();
      try { document.execCommand("copy"); } catch (_) { /* nothing else to try */ }
      t.remove();
    }
    toast("Copied " + text);
    window.uffsCopied = text;
  }

  let toastTimer = 0;
  function toast(msg) {
    const t = $("toast");
    t.textContent = msg; t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, 1800);
  }

  function sortBy(key) {
    if (st.sort === key) st.reverse = !st.reverse;
    else { st.sort = key; st.reverse = key === "size" || key === "modified"; }
    st.offset = 0;
    markSort();
    schedule("sort");
  }

  // A data term (content:, type:, hash:) reads the files themselves, which can take seconds on a large volume:
  // such a query waits for Enter instead of running at every keystroke (the server cannot stop a search begun).
  const DATA_TERM = /(^|[\s!|(<])([a-z]+:)*(content|type|hash):/i;
  let pending = false;
  q.addEventListener("input", () => {
    if (view === "du") return;
    st.q = q.value; st.offset = 0;
    pending = DATA_TERM.test(st.q);
    if (pending) {
      clearTimeout(timer);
      count.textContent = "press Enter to read the files";
      return;
    }
    schedule("type");
  });
  document.querySelectorAll("#results th").forEach((th) => th.addEventListener("click", () => sortBy(th.dataset.sort)));
  $("prev").addEventListener("click", () => page(-1));
  $("next").addEventListener("click", () => page(1));
  tbody.addEventListener("click", (e) => {
    const tr = e.target.closest("tr");
    if (tr) select(+tr.dataset.i, false);
  });
  tbody.addEventListener("dblclick", (e) => {
    const tr = e.target.closest("tr");
    if (tr) copy(tr.dataset.path);
  });
  document.addEventListener("keydown", (e) => {
    if (view !== "search") return;
    const n = st.rows.length;
    switch (e.key) {
      case "ArrowDown": if (n) select(Math.min(n - 1, st.sel + 1)); break;
      case "ArrowUp": if (n) select(Math.max(0, st.sel - 1)); break;
      case "PageDown": page(1); break;
      case "PageUp": page(-1); break;
      case "Enter":
        if (pending) { pending = false; schedule("type"); }
        else if (st.sel >= 0 && st.rows[st.sel]) copy(st.rows[st.sel].path);
        break;
      case "Escape": q.value = ""; st.q = ""; st.offset = 0; schedule("type"); break;
      default: return;
    }
    e.preventDefault();
  });

  // ---- disk usage
  let view = "search";
  // Tiles are sized by allocated space (what the disk holds, WizTree's default) or by logical size.
  const du = { path: null, seq: 0, by: "allocated" };
  const measure = (r) => r[du.by];
  document.querySelectorAll("#du-by button").forEach((b) => b.addEventListener("click", () => {
    du.by = b.dataset.by;
    document.querySelectorAll("#du-by button").forEach((x) => x.classList.toggle("active", x === b));
    loadDu(du.path);
  }));

  function setView(v) {
    view = v;
    $("search-view").hidden = v !== "search";
    $("du-view").hidden = v !== "du";
    $("tab-search").classList.toggle("active", v === "search");
    $("tab-du").classList.toggle("active", v === "du");
    q.disabled = v === "du";
    $("toast").hidden = true;
    if (v === "du") loadDu(du.path); else { q.focus(); remember(); }
  }
  $("tab-search").addEventListener("click", () => setView("search"));
  $("tab-du").addEventListener("click", () => setView("du"));

  // The listing's rows in a tree: a row's children are the deeper rows just before it (see `uffs du`).
  function tree(rows) {
    const pending = [];
    const roots = [];
    for (const r of rows) {
      r.kids = pending[r.depth + 1] || [];
      pending[r.depth + 1] = [];
      if (r.depth === 0) roots.push(r);
      else (pending[r.depth] = pending[r.depth] || []).push(r);
    }
    return roots;
  }
  const isFolder = (r) => r.kids.length > 0 || r.folders > 0 || r.files !== 1;
  const baseName = (p) => p.replace(/[\\/]+$/, "").split(/[\\/]/).pop() || p;

  async function loadDu(path) {
    const my = ++du.seq, at = performance.now();
    const params = { depth: 2, limit: 40, sort: du.by };
    if (path) params.path = path;
    const [r, b] = await api("/api/du", params).catch((e) => [{ ok: false }, { error: e.message }]);
    if (my !== du.seq) return;
    const e = $("du-error");
    if (!r.ok) { e.textContent = b.error; e.hidden = false; return; }
    e.hidden = true;
    du.path = path;
    remember();
    const roots = tree(b.rows);
    let top, tiles;
    if (roots.length === 1) { top = roots[0]; tiles = top.kids; }
    else {
      // Several volumes: each is a tile.
      top = { path: null, size: roots.reduce((s, r) => s + r.size, 0), files: 0, folders: 0,
        allocated: roots.reduce((s, r) => s + r.allocated, 0) };
      tiles = roots.map((r) => Object.assign(r, { volume: true }));
    }
    crumbs(path);
    drawTreemap(top, tiles);
    duTable(top, tiles);
    count.textContent = human(top.allocated) + " allocated, " + human(top.size) + " in files, in " + (path || "every volume");
    requestAnimationFrame(() => setTimeout(() => {
      window.uffsTimings.push({ kind: "du", query: path || "", ms: performance.now() - at, rows: b.rows.length });
    }, 0));
  }

  function crumbs(path) {
    const nav = $("crumbs");
    nav.textContent = "";
    const link = (text, p) => {
      const a = document.createElement("a");
      a.textContent = text;
      a.addEventListener("click", () => loadDu(p));
      nav.appendChild(a);
    };
    const sep = () => { const s = document.createElement("span"); s.className = "sep"; s.textContent = "›"; nav.appendChild(s); };
    link("All volumes", null);
    if (!path) return;
    const s = path.includes("\\") ? "\\" : "/";
    const parts = path.split(s).filter((x, i) => i === 0 || x !== "");
    let acc = "";
    parts.forEach((part, i) => {
      acc = i === 0 ? part + s : acc + (acc.endsWith(s) ? "" : s) + part;
      sep();
      link(i === 0 ? part + s : part, acc);
    });
  }

  // Squarified treemap (Bruls, Huizing, van Wijk): rows of tiles whose aspect ratios stay near 1.
  function squarify(items, x, y, w, h) {
    const out = [];
    let rest = items.filter((i) => i.value > 0);
    const total = rest.reduce((s, i) => s + i.value, 0);
    if (!total || w <= 0 || h <= 0) return out;
    const scale = (w * h) / total;
    const worst = (row, side) => {
      const s = row.reduce((a, i) => a + i.value, 0) * scale;
      const mx = Math.max(...row.map((i) => i.value)) * scale, mn = Math.min(...row.map((i) => i.value)) * scale;
      return Math.max((side * side * mx) / (s * s), (s * s) / (side * side * mn));
    };
    while (rest.length) {
      const side = Math.min(w, h);
      const row = [rest[0]];
      let i = 1;
      while (i < rest.length && worst(row.concat(rest[i]), side) <= worst(row, side)) row.push(rest[i++]);
      const area = row.reduce((a, r) => a + r.value, 0) * scale;
      if (w >= h) {
        const cw = area / h;
        let cy = y;
        for (const r of row) { const rh = (r.value * scale) / cw; out.push({ item: r, x, y: cy, w: cw, h: rh }); cy += rh; }
        x += cw; w -= cw;
      } else {
        const rh = area / w;
        let cx = x;
        for (const r of row) { const rw = (r.value * scale) / rh; out.push({ item: r, x: cx, y, w: rw, h: rh }); cx += rw; }
        y += rh; h -= rh;
      }
      rest = rest.slice(i);
    }
    return out;
  }

  const COLORS = ["#93c5fd", "#86efac", "#fcd34d", "#fca5a5", "#c4b5fd", "#67e8f9", "#fdba74", "#f9a8d4", "#bef264", "#a5b4fc"];

  function drawTreemap(top, tiles) {
    const box = $("treemap");
    box.textContent = "";
    const W = box.clientWidth, H = box.clientHeight;
    const items = tiles.map((t) => ({ value: measure(t), row: t }));
    const shown = tiles.reduce((s, t) => s + measure(t), 0);
    if (measure(top) > shown * 1.001) items.push({ value: measure(top) - shown, row: null });
    squarify(items, 0, 0, W, H).forEach((c, i) => {
      const d = document.createElement("div");
      d.style.left = c.x + "px"; d.style.top = c.y + "px";
      d.style.width = Math.max(0, c.w) + "px"; d.style.height = Math.max(0, c.h) + "px";
      if (!c.item.row) {
        d.className = "tile other";
        d.title = "not listed (more entries, the folder's own index, or named streams counted in the total): " +
          human(c.item.value);
        box.appendChild(d);
        return;
      }
      const r = c.item.row;
      const folder = r.volume || isFolder(r);
      d.className = "tile" + (folder ? "" : " leaf");
      d.style.background = COLORS[i % COLORS.length];
      d.dataset.path = r.path;
      d.title = r.path + "\n" + human(r.allocated) + " allocated · " + human(r.size) + " size · " + nf.format(r.files) +
        " files · " + nf.format(r.folders) + " folders";
      const label = document.createElement("div");
      label.className = "label";
      label.textContent = (r.volume ? r.path : baseName(r.path)) + "  " + human(measure(r));
      d.appendChild(label);
      // The tile's own children, inside it below its label.
      const kids = (r.kids || []).map((k) => ({ value: measure(k), row: k }));
      if (c.w > 40 && c.h > 40 && kids.length) {
        squarify(kids, 2, 18, c.w - 6, c.h - 22).forEach((s) => {
          if (s.w < 3 || s.h < 3) return;
          const e = document.createElement("div");
          e.className = "sub";
          e.style.left = s.x + "px"; e.style.top = s.y + "px"; e.style.width = s.w + "px"; e.style.height = s.h + "px";
          if (s.w > 36 && s.h > 14) e.textContent = baseName(s.item.row.path);
          d.appendChild(e);
        });
      }
      if (folder) d.addEventListener("click", () => loadDu(r.path));
      box.appendChild(d);
    });
  }

  function duTable(top, tiles) {
    const tb = document.querySelector("#du-table tbody");
    tb.textContent = "";
    for (const r of tiles) {
      const tr = document.createElement("tr");
      const folder = r.volume || isFolder(r);
      if (folder) { tr.className = "folder"; tr.addEventListener("click", () => loadDu(r.path)); }
      const share = measure(top) ? (100 * measure(r)) / measure(top) : 0;
      [r.volume ? r.path : baseName(r.path) + (folder ? "/" : ""), human(r.allocated), human(r.size), share.toFixed(1) + "%",
        nf.format(r.files), nf.format(r.folders)].forEach((v, i) => {
        const td = document.createElement("td");
        td.textContent = v;
        if (i) td.className = "num";
        tr.appendChild(td);
      });
      tb.appendChild(tr);
    }
  }

  window.addEventListener("resize", () => { if (view === "du") loadDu(du.path); });

  // ---- status line
  api("/api/status", {}).then(([r, b]) => {
    if (!r.ok) { $("status").textContent = b.error || "no status"; return; }
    const vols = (b.volumes || []).map((v) => (v.name || v.source) + ": " + nf.format(v.entries || 0) + " entries (" + v.state + ")");
    $("status").textContent = vols.join(" · ") || "no volumes";
  }).catch(() => {});

  function markSort() {
    document.querySelectorAll("#results th").forEach((th) => {
      th.classList.toggle("sorted", th.dataset.sort === st.sort);
      th.classList.toggle("desc", th.dataset.sort === st.sort && st.reverse);
    });
  }
  const saved = new URLSearchParams(location.hash.slice(1));
  st.q = q.value = saved.get("q") || "";
  st.sort = ["name", "path", "size", "modified"].includes(saved.get("sort")) ? saved.get("sort") : "";
  st.reverse = saved.get("reverse") === "1";
  st.offset = Math.max(0, parseInt(saved.get("offset") || "0", 10) || 0);
  markSort();
  if (saved.get("view") === "du") { du.path = saved.get("path"); setView("du"); }
  schedule("type");
})();
