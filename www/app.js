// The simulator page. It only renders: every decision, number and sentence comes from the
// simulation in Rust (src/simulator), which drives the real planner. Charts are small
// hand-written SVG (four line charts with bands and a cursor need less code than wiring a
// charting library, and nothing has to be vendored).

const $ = (s, el = document) => el.querySelector(s);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v; else if (k.startsWith('on')) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
};
const SVG = 'http://www.w3.org/2000/svg';
const svg = (tag, attrs = {}) => {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
};

/** Paimon options that change decisions: [key, kind, hint or choices]. */
const OPTIONS = [
  ['num-sorted-run.compaction-trigger', 'number', '5'],
  ['num-sorted-run.stop-trigger', 'number', 'trigger + 3'],
  ['compaction.max-size-amplification-percent', 'number', '200'],
  ['compaction.size-ratio', 'number', '1'],
  ['target-file-size', 'text', '128 mb (pk) / 256 mb'],
  ['compaction.min.file-num', 'number', '5'],
  ['merge-engine', ['deduplicate', 'partial-update', 'aggregation', 'first-row']],
  ['changelog-producer', ['none', 'input', 'full-compaction', 'lookup']],
  ['deletion-vectors.enabled', ['true', 'false']],
  ['lookup-compact', ['radical', 'gentle']],
  ['lookup-compact.max-interval', 'number', '2 × trigger'],
  ['compaction.optimization-interval', 'text', 'e.g. 1 h'],
  ['compaction.total-size-threshold', 'text', 'e.g. 1 gb'],
  ['compaction.incremental-size-threshold', 'text', 'e.g. 512 mb'],
  ['compaction.offpeak.start.hour', 'number', '-1'],
  ['compaction.offpeak.end.hour', 'number', '-1'],
  ['compaction.offpeak-ratio', 'number', '0'],
  ['full-compaction.delta-commits', 'number', 'none'],
  ['compaction.force-up-level-0', ['true', 'false']],
  ['write-only', ['true', 'false']],
];

const UNITS = ['KB', 'MB', 'GB', 'TB', 'PB'];
function bytes(b) {
  if (b < 1024) return `${Math.round(b)} B`;
  let v = b / 1024, i = 0;
  while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(1)} ${UNITS[i]}`;
}
function dur(ms) {
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  if (s < 7200) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

const page = {
  pc: null, A: null, B: null, pos: 0, playing: false, replay: null,
  computing: false, lastFrame: 0, acc: 0, hashTimer: 0, pendingPos: null,
};
window.simulatorPage = page; // for the console (tests drive the page through its controls)

function showError(msg) {
  const e = $('#error');
  e.hidden = !msg;
  e.textContent = msg || '';
}

// ---- configuration -----------------------------------------------------------------------

function buildOptionInputs() {
  const box = $('#options');
  for (const [key, kind, hint] of OPTIONS) {
    let input;
    if (Array.isArray(kind)) {
      input = el('select', { name: `o.${key}` }, el('option', { value: '' }, 'default'), ...kind.map((v) => el('option', { value: v }, v)));
    } else {
      input = el('input', { name: `o.${key}`, type: kind === 'number' ? 'number' : 'text', placeholder: hint });
    }
    box.append(el('label', { title: key }, el('span', { class: 'mono' }, key), input));
  }
}

function num(form, name) {
  const v = form.elements[name].value;
  return v === '' ? undefined : Number(v);
}

function readForm() {
  const f = $('#form');
  const options = {};
  for (const [key] of OPTIONS) {
    const v = f.elements[`o.${key}`].value.trim();
    if (v !== '') options[key] = v;
  }
  const dist = f.elements['w.dist'].value;
  return {
    seed: num(f, 'seed') ?? 1,
    table: f.elements.table.value,
    buckets: num(f, 'buckets') ?? 1,
    flavor: f.elements.flavor.value,
    flushes: num(f, 'flushes') ?? 200,
    options,
    workload: {
      write_mb_per_s: num(f, 'w.write_mb_per_s'),
      flush_mb: num(f, 'w.flush_mb'),
      key_space: num(f, 'w.key_space'),
      distribution: dist === 'zipf' ? { kind: 'zipf', s: num(f, 'w.zipf_s') ?? 1.1 } : { kind: dist },
      update_ratio: num(f, 'w.update_ratio') ?? 0,
      delete_ratio: num(f, 'w.delete_ratio') ?? 0,
      commit_interval_s: num(f, 'w.commit_interval_s') ?? 0,
      jitter: num(f, 'w.jitter') ?? 0.2,
    },
    cost: { rewrite_mb_per_s: num(f, 'c.rewrite_mb_per_s'), copy_mb_per_s: num(f, 'c.copy_mb_per_s') },
  };
}

function writeForm(cfg, ab, bText) {
  const f = $('#form');
  const set = (name, v) => { if (v !== undefined && v !== null && f.elements[name]) f.elements[name].value = v; };
  set('seed', cfg.seed); set('table', cfg.table); set('buckets', cfg.buckets); set('flavor', cfg.flavor); set('flushes', cfg.flushes);
  const w = cfg.workload || {};
  for (const k of ['write_mb_per_s', 'flush_mb', 'key_space', 'update_ratio', 'delete_ratio', 'commit_interval_s', 'jitter']) set(`w.${k}`, w[k]);
  if (w.distribution) { set('w.dist', w.distribution.kind); if (w.distribution.s !== undefined) set('w.zipf_s', w.distribution.s); }
  const c = cfg.cost || {};
  set('c.rewrite_mb_per_s', c.rewrite_mb_per_s); set('c.copy_mb_per_s', c.copy_mb_per_s);
  for (const [key] of OPTIONS) f.elements[`o.${key}`].value = (cfg.options || {})[key] ?? '';
  f.elements.ab.checked = !!ab;
  f.elements.b_options.value = bText || '';
}

/** B = A with the option lines of the compare box. */
function configB(a, text) {
  const b = structuredClone(a);
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#')) continue;
    const i = t.indexOf('=');
    if (i < 0) throw new Error(`B options: expected key=value, got '${t}'`);
    const k = t.slice(0, i).trim(), v = t.slice(i + 1).trim();
    if (v === '') delete b.options[k]; else b.options[k] = v;
  }
  return b;
}

// ---- the URL -----------------------------------------------------------------------------

function encodeState() {
  const f = $('#form');
  const s = { a: readForm(), ab: f.elements.ab.checked, b: f.elements.b_options.value, p: page.pos };
  const json = JSON.stringify(s);
  return btoa(String.fromCharCode(...new TextEncoder().encode(json))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function decodeState(hash) {
  const m = /(?:^#|&)s=([^&]+)/.exec(hash);
  if (!m) return null;
  const b64 = m[1].replace(/-/g, '+').replace(/_/g, '/');
  const bin = atob(b64 + '==='.slice((b64.length + 3) % 4));
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
}

function scheduleHash() {
  clearTimeout(page.hashTimer);
  page.hashTimer = setTimeout(() => {
    if (!page.A) return;
    history.replaceState(null, '', `#s=${encodeState()}`);
  }, 150);
}

// ---- running -----------------------------------------------------------------------------

function side(cfg) {
  const sim = new page.pc.WebSimulation(cfg);
  return { sim, cfg, chart: null, chartLen: -1 };
}

function build(position = 0) {
  showError('');
  stop();
  for (const s of [page.A, page.B]) if (s) s.sim.free();
  page.A = page.B = null;
  try {
    const a = readForm();
    if (page.replay) a.replay = page.replay;
    page.A = side(a);
    const f = $('#form');
    if (f.elements.ab.checked) page.B = side(configB(a, f.elements.b_options.value));
  } catch (e) {
    page.A = page.B = null;
    showError(String(e.message || e));
    render();
    return;
  }
  page.pos = 0;
  page.pendingPos = position;
  compute();
}

/** Computes the whole run in slices so the page stays responsive. */
function compute() {
  if (page.computing) return;
  page.computing = true;
  const slice = () => {
    const sides = [page.A, page.B].filter(Boolean);
    if (!sides.length) { page.computing = false; return; }
    try {
      for (const s of sides) if (!s.sim.finished) s.sim.advance(20000);
    } catch (e) {
      showError(String(e.message || e));
      page.computing = false;
      return;
    }
    const done = sides.every((s) => s.sim.finished);
    $('#progress').textContent = done ? '' : `computing… ${page.A.sim.length.toLocaleString()} events`;
    if (page.pendingPos !== null && (page.pendingPos <= page.A.sim.length || done)) {
      page.pos = Math.min(page.pendingPos, page.A.sim.length);
      page.pendingPos = null;
    }
    render();
    if (done) {
      page.computing = false;
      document.body.dataset.ready = 'true';
      return;
    }
    setTimeout(slice, 0);
  };
  document.body.dataset.ready = 'false';
  slice();
}

function seek(p) {
  if (!page.A) return;
  page.pos = Math.max(0, Math.min(p, page.A.sim.length));
  render();
}

function stop() {
  page.playing = false;
  $('#play').textContent = '▶ Play';
}

function play() {
  if (!page.A) return;
  if (page.pos >= page.A.sim.length && page.A.sim.finished) page.pos = 0;
  page.playing = true;
  $('#play').textContent = '❚❚ Pause';
  page.lastFrame = performance.now();
  page.acc = 0;
  requestAnimationFrame(tick);
}

function tick(now) {
  if (!page.playing) return;
  const speed = Number($('#speed').value);
  page.acc += ((now - page.lastFrame) / 1000) * speed;
  page.lastFrame = now;
  const n = Math.floor(page.acc);
  if (n > 0) {
    page.acc -= n;
    seek(page.pos + n);
    if (page.pos >= page.A.sim.length && page.A.sim.finished) { stop(); return; }
  }
  requestAnimationFrame(tick);
}

// ---- rendering ---------------------------------------------------------------------------

function ageColor(age, maxAge) {
  const t = maxAge > 0 ? Math.log1p(age) / Math.log1p(maxAge) : 0;
  // New files warm and light, old files deep blue.
  const hue = 45 + t * 170, light = 68 - t * 30;
  return `hsl(${hue.toFixed(0)} 80% ${light.toFixed(0)}%)`;
}

const ACTION_COLOR = { rewrite: 'var(--rewrite)', upgrade: 'var(--upgrade)', lookup: 'var(--lookup)' };

function laneSvg(lane, scale, maxAge, isPk) {
  const W = 760, label = 44, rowH = 15, gap = 4, width = W - label - 70;
  const rows = [];
  if (isPk) {
    for (const r of lane.runs) rows.push({ label: `L${r.level}`, files: r.files, bytes: r.bytes });
  } else {
    // A queue: files oldest first, wrapped into rows.
    let cur = null;
    for (const r of lane.runs) {
      for (const f of r.files) {
        if (!cur || cur.bytes + f.bytes > (width / scale) * 0.98) { cur = { label: rows.length ? '' : 'files', files: [], bytes: 0 }; rows.push(cur); }
        cur.files.push(f); cur.bytes += f.bytes;
      }
    }
  }
  const H = Math.max(rows.length, 1) * (rowH + gap) + 2;
  const s = svg('svg', { class: 'levels', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'xMinYMin meet', role: 'img', 'aria-label': `${lane.name} sorted runs` });
  rows.forEach((row, i) => {
    const y = i * (rowH + gap) + 1;
    const t = svg('text', { x: 0, y: y + rowH - 3 });
    t.textContent = row.label;
    s.append(t);
    let x = label;
    for (const f of row.files) {
      const w = Math.max(2, f.bytes * scale - 1);
      const r = svg('rect', {
        x, y, width: w, height: rowH, rx: 2,
        fill: ageColor(f.age_s, maxAge),
        'fill-opacity': f.queued === false ? 0.35 : 1,
        'data-file': f.name,
      });
      if (f.action) { r.setAttribute('stroke', ACTION_COLOR[f.action]); r.setAttribute('stroke-width', 2.5); r.setAttribute('class', `in-unit ${f.action}`); }
      const title = svg('title');
      title.textContent = `${f.name}: ${bytes(f.bytes)}, ${f.rows.toLocaleString()} rows, ${dur(f.age_s * 1000)} old${f.action ? `, ${f.action} in the running task` : ''}${f.queued === false ? ', no longer queued' : ''}`;
      r.append(title);
      s.append(r);
      x += w + 1;
    }
    if (isPk) {
      const tb = svg('text', { x: x + 4, y: y + rowH - 3 });
      tb.textContent = bytes(row.bytes);
      s.append(tb);
    }
  });
  return s;
}

function renderSide(v, cls, title, scale, maxAge) {
  const isPk = v.table === 'primary-key';
  const box = el('div', { class: `side ${cls}` }, el('h3', {}, title));
  v.lanes.forEach((lane, i) => {
    const stalled = lane.stalled;
    const head = el('div', { class: 'lane-head' },
      el('span', { class: 'name' }, lane.name),
      el('span', { class: 'runs-count', 'data-runs': lane.sorted_runs },
        isPk ? `${lane.sorted_runs} sorted run${lane.sorted_runs === 1 ? '' : 's'}` : `${lane.sorted_runs} file${lane.sorted_runs === 1 ? '' : 's'}`),
      lane.compaction_trigger ? el('span', { class: 'muted' }, `trigger ${lane.compaction_trigger} · stop ${lane.stop_trigger}`) : null,
      el('span', { class: 'muted' }, `${bytes(lane.bytes)} · pending ${bytes(lane.pending_bytes)}`),
      stalled ? el('span', { class: `badge stall-indicator ${stalled === 'commit-wait' ? 'wait' : ''}` },
        stalled === 'write-stall' ? 'WRITE STALL' : 'COMMIT WAITS') : null,
      lane.stall_ms > 0 ? el('span', { class: 'muted' }, `stalled ${dur(lane.stall_ms)} so far`) : null,
    );
    const task = lane.task;
    const decision = el('div', { class: `decision rule-${lane.status_rule}`, 'data-rule': lane.status_rule }, lane.status);
    if (task) decision.append(el('span', { class: 'muted' }, ` — ${dur(task.duration_ms)}, ${dur(task.remaining_ms)} left; reads ${bytes(task.bytes_in)}, writes ${bytes(task.bytes_out)}`));
    box.append(el('div', { class: `lane${stalled ? ' stalled' : ''}`, 'data-lane': i }, head, decision, laneSvg(lane, scale, maxAge, isPk)));
  });
  return box;
}

function maxima(views) {
  let maxBytes = 1, maxAge = 1;
  for (const v of views) for (const l of v.lanes) for (const r of l.runs) {
    maxBytes = Math.max(maxBytes, r.bytes);
    for (const f of r.files) maxAge = Math.max(maxAge, f.age_s);
  }
  return { maxBytes, maxAge };
}

const METRICS = [
  ['write amplification', (m) => m.write_amp, (x) => `${x.toFixed(2)}×`, -1],
  ['space amplification', (m) => m.space_amp, (x) => `${x.toFixed(2)}×`, -1],
  ['sorted runs (busiest bucket)', (m) => m.sorted_runs, (x) => `${x}`, -1],
  ['pending compaction', (m) => m.pending_bytes, bytes, -1],
  ['table size', (m) => m.total_bytes, bytes, -1],
  ['live data', (m) => m.live_bytes, bytes, 0],
  ['flushed', (m) => m.flushed_bytes, bytes, 1],
  ['written by compaction', (m) => m.compaction_written_bytes, bytes, -1],
  ['compactions', (m) => m.compactions, (x) => `${x}`, 0],
  ['upgrades / rewrites', (m) => m.upgrades - m.rewrites, null, 0],
  ['write stalls', (m) => m.stalls, (x) => `${x}`, -1],
  ['time stalled', (m) => m.stall_ms, dur, -1],
  ['ingest', (m) => m.ingest_mb_per_s, (x) => `${x.toFixed(1)} MB/s`, 1],
];

function renderMetrics(vA, vB) {
  const t = $('#metrics');
  t.replaceChildren();
  t.append(el('tr', {}, el('th', {}, 'metric'), el('th', {}, vB ? 'A' : 'value'), vB ? el('th', {}, 'B') : null, vB ? el('th', {}, 'B − A') : null));
  for (const [name, get, fmt, better] of METRICS) {
    const a = vA.metrics, b = vB && vB.metrics;
    const show = (m) => (fmt ? fmt(get(m)) : `${m.upgrades} / ${m.rewrites}`);
    const row = el('tr', { 'data-metric': name }, el('td', {}, name), el('td', {}, show(a)));
    if (b) {
      row.append(el('td', {}, show(b)));
      const d = get(b) - get(a);
      let text = '', cls = '';
      if (fmt) {
        const mag = fmt(Math.abs(d));
        text = d === 0 ? '=' : `${d > 0 ? '+' : '−'}${mag}`;
        if (better !== 0 && d !== 0) cls = (d > 0) === (better > 0) ? 'better' : 'worse';
      }
      row.append(el('td', { class: `diff ${cls}` }, text));
    }
    t.append(row);
  }
}

const CHARTS = [
  ['write amplification', 'write_amp', (x) => `${x.toFixed(1)}×`],
  ['space amplification', 'space_amp', (x) => `${x.toFixed(2)}×`],
  ['sorted runs (read amplification)', 'runs', (x) => `${Math.round(x)}`],
  ['pending compaction bytes', 'pending_bytes', bytes],
];

function chartData(s) {
  if (!s) return null;
  if (s.chartLen !== s.sim.length) {
    s.chart = s.sim.chart(700);
    s.chartLen = s.sim.length;
  }
  return s.chart;
}

function renderCharts(tA) {
  const a = chartData(page.A), b = chartData(page.B);
  const box = $('#charts');
  box.replaceChildren();
  if (!a || !a.t_ms.length) return;
  const t0 = Math.min(a.t_ms[0], b && b.t_ms.length ? b.t_ms[0] : Infinity);
  const t1 = Math.max(a.t_ms[a.t_ms.length - 1], b && b.t_ms.length ? b.t_ms[b.t_ms.length - 1] : -Infinity);
  const W = 400, H = 120, L = 46, R = 6, T = 6, B = 16;
  const X = (t) => L + ((t - t0) / Math.max(1, t1 - t0)) * (W - L - R);
  for (const [title, key, fmt] of CHARTS) {
    let max = 0;
    for (const d of [a, b]) if (d) for (const v of d[key]) max = Math.max(max, v);
    max = max > 0 ? max * 1.08 : 1;
    const Y = (v) => T + (1 - v / max) * (H - T - B);
    const s = svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', 'data-chart': key });
    // Stall bands first, under the lines.
    for (const [d, op] of [[a, 1], [b, 0.6]]) {
      if (!d) continue;
      for (let i = 0; i < d.stalled.length; i++) {
        if (!d.stalled[i]) continue;
        const x0 = X(i > 0 ? d.t_ms[i - 1] : d.t_ms[i]);
        s.append(svg('rect', { x: x0, y: T, width: Math.max(1, X(d.t_ms[i]) - x0), height: H - T - B, fill: 'var(--stall)', 'fill-opacity': op, class: 'stall-band' }));
      }
    }
    s.append(svg('line', { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: '#d0d5dd' }));
    for (const [d, color] of [[b, 'var(--b)'], [a, 'var(--a)']]) {
      if (!d) continue;
      let p = '';
      d[key].forEach((v, i) => { p += `${i ? 'L' : 'M'}${X(d.t_ms[i]).toFixed(1)},${Y(v).toFixed(1)}`; });
      s.append(svg('path', { d: p, fill: 'none', stroke: color, 'stroke-width': 1.5, 'vector-effect': 'non-scaling-stroke' }));
    }
    const top = svg('text', { x: 2, y: T + 9 }); top.textContent = fmt(max / 1.08); s.append(top);
    const zero = svg('text', { x: 2, y: H - B }); zero.textContent = '0'; s.append(zero);
    const end = svg('text', { x: W - R, y: H - 3, 'text-anchor': 'end' }); end.textContent = dur(t1 - t0); s.append(end);
    s.append(svg('line', { x1: X(tA), x2: X(tA), y1: T, y2: H - B, stroke: '#101828', 'stroke-dasharray': '3 2', class: 'cursor' }));
    s.addEventListener('click', (ev) => {
      const r = s.getBoundingClientRect();
      const x = ((ev.clientX - r.left) / r.width) * W;
      const t = t0 + ((x - L) / (W - L - R)) * (t1 - t0);
      seek(page.A.sim.positionAtTime(t));
    });
    box.append(el('div', { class: 'chart' }, el('h4', {}, title), s));
  }
}

function renderLog(pos) {
  const list = page.A.sim.decisions(pos, 200);
  const ol = $('#log');
  ol.replaceChildren();
  const t0 = page.A.cfg.workload.start_ms ?? 0;
  for (const d of list) {
    const li = el('li', { 'data-position': d.position, class: d.position === pos ? 'current' : '', onclick: () => seek(d.position) },
      el('span', { class: 't mono' }, `#${d.event} ${page.A.sim.length ? '' : ''}bucket ${d.lane}`),
      d.text);
    ol.append(li);
  }
  if (!list.length) ol.append(el('li', { class: 'muted' }, 'No compaction picked yet.'));
  void t0;
}

function render() {
  const A = page.A;
  const scrub = $('#scrub');
  if (!A) {
    $('#sides').replaceChildren();
    $('#charts').replaceChildren();
    $('#log').replaceChildren();
    $('#metrics').replaceChildren();
    $('#position').textContent = '0 / 0';
    return;
  }
  scrub.max = A.sim.length;
  scrub.value = page.pos;
  const vA = A.sim.view(page.pos);
  const vB = page.B ? page.B.sim.view(page.B.sim.positionAtTime(vA.t_ms)) : null;
  const clock = new Date(vA.t_ms).toISOString().slice(11, 19);
  $('#position').textContent = `${page.pos.toLocaleString()} / ${A.sim.length.toLocaleString()} · +${dur(vA.elapsed_s * 1000)} · ${clock} UTC`;
  $('#event').textContent = vA.event ? vA.event.text : 'Start: no event yet. Press Play or Step.';
  const { maxBytes, maxAge } = maxima(vB ? [vA, vB] : [vA]);
  const scale = (760 - 44 - 70) / maxBytes;
  const sides = $('#sides');
  sides.className = vB ? 'ab' : '';
  const summary = (cfg) => `${cfg.table}, ${Object.entries(cfg.options).map(([k, v]) => `${k}=${v}`).join(', ') || 'default options'}`;
  sides.replaceChildren(
    renderSide(vA, 'a', vB ? `A: ${summary(A.cfg)}` : summary(A.cfg), scale, maxAge),
    vB ? renderSide(vB, 'b', `B: ${summary(page.B.cfg)}`, scale, maxAge) : '',
  );
  sides.append(el('div', { class: 'legend' },
    el('span', {}, el('span', { class: 'sw', style: 'background:hsl(45 80% 68%)' }), 'new file'),
    el('span', {}, el('span', { class: 'sw', style: 'background:hsl(215 80% 38%)' }), 'old file'),
    el('span', {}, el('span', { class: 'sw', style: 'border:2.5px solid var(--rewrite)' }), 'rewritten by the running task'),
    el('span', {}, el('span', { class: 'sw', style: 'border:2.5px solid var(--upgrade)' }), 'upgraded (metadata only)'),
    el('span', {}, el('span', { class: 'sw', style: 'border:2.5px solid var(--lookup)' }), 'upgraded after a lookup read'),
    el('span', {}, 'bar width = bytes')));
  renderMetrics(vA, vB);
  renderCharts(vA.t_ms);
  renderLog(page.pos);
  const done = A.sim.finished && (!page.B || page.B.sim.finished);
  $('#digest').textContent = done ? A.sim.digest() : '–';
  $('#digest-b').textContent = done && page.B ? ` · B ${page.B.sim.digest()}` : '';
  scheduleHash();
}

// ---- replay ------------------------------------------------------------------------------

function setReplay(replay, name) {
  page.replay = replay;
  const lanes = new Set();
  for (const s of replay.snapshots) for (const c of s.changes || []) lanes.add(`${c.partition}/${c.bucket}`);
  $('#replay-status').textContent = `Loaded ${replay.table ? `${replay.table} (${name})` : name}: ${replay.snapshots.length} snapshot${replay.snapshots.length === 1 ? '' : 's'}, ${Math.max(1, lanes.size)} bucket${lanes.size === 1 ? '' : 's'}. Its history is replayed first, then the writers and the planner go on.`;
  if (replay.table_kind === 'append') $('#form').elements.table.value = 'append-bucketed';
  if (replay.table_kind === 'primary-key') $('#form').elements.table.value = 'primary-key';
}

async function loadReplayText(text, name) {
  try {
    setReplay(page.pc.parseReplay(text), name);
    build();
  } catch (e) {
    showError(`Cannot replay ${name}: ${e.message || e}`);
  }
}

async function loadReplayFolder(files) {
  const list = [...files];
  const json = list.filter((f) => f.name.endsWith('.json'));
  for (const f of json) {
    try {
      const replay = page.pc.parseReplay(await f.text());
      setReplay(replay, f.webkitRelativePath || f.name);
      build();
      return;
    } catch (_) { /* try the next file */ }
  }
  const paimon = list.some((f) => /(^|\/)snapshot\/snapshot-\d+$/.test(f.webkitRelativePath || ''));
  showError(paimon
    ? 'This folder is a Paimon table, but its manifests are Avro, which the page cannot read yet: export the table to the paimon-compact-table JSON and load that.'
    : 'No paimon-compact-table JSON found in this folder.');
}

// ---- wiring ------------------------------------------------------------------------------

async function main() {
  buildOptionInputs();
  try {
    // Imported here, not at the top: a missing bundle must still show the message below
    // instead of leaving a page that silently does nothing.
    const { load } = await import('./pkg/loader.js');
    page.pc = await load();
  } catch (e) {
    showError(`Could not load the planner: the bundle in www/pkg is missing or broken (build it with \`bash .ci/web-bundle.sh\`): ${e.message || e}`);
    return;
  }
  const f = $('#form');
  f.addEventListener('submit', (e) => { e.preventDefault(); build(); });
  $('#play').addEventListener('click', () => (page.playing ? stop() : play()));
  $('#step').addEventListener('click', () => { stop(); seek(page.pos + 1); });
  $('#back').addEventListener('click', () => { stop(); seek(page.pos - 1); });
  $('#end').addEventListener('click', () => { stop(); seek(page.A ? page.A.sim.length : 0); });
  $('#scrub').addEventListener('input', (e) => { stop(); seek(Number(e.target.value)); });
  $('#share').addEventListener('click', async () => {
    history.replaceState(null, '', `#s=${encodeState()}`);
    try { await navigator.clipboard.writeText(location.href); $('#progress').textContent = 'link copied'; } catch (_) { $('#progress').textContent = 'link is in the address bar'; }
  });
  $('#replay-file').addEventListener('change', async (e) => { const file = e.target.files[0]; if (file) await loadReplayText(await file.text(), file.name); });
  $('#replay-dir').addEventListener('change', (e) => loadReplayFolder(e.target.files));
  $('#replay-clear').addEventListener('click', () => { page.replay = null; $('#replay-status').textContent = 'No table loaded.'; build(); });
  document.addEventListener('keydown', (e) => {
    if (e.target.closest('input, select, textarea')) return;
    if (e.key === ' ') { e.preventDefault(); page.playing ? stop() : play(); }
    if (e.key === 'ArrowRight') seek(page.pos + 1);
    if (e.key === 'ArrowLeft') seek(page.pos - 1);
  });
  let state = null;
  try { state = decodeState(location.hash); } catch (e) { showError(`The link's state is unreadable: ${e.message}`); }
  if (state) writeForm(state.a, state.ab, state.b);
  build(state ? state.p || 0 : 0);
}

main();
