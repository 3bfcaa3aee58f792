// The simulator page in real headless Chromium: change options, run, step, scrub, compare A/B,
// load a shared URL, replay a table; assert what the page shows and keep screenshots
// (target/e2e/*.png). Also: the browser's decisions equal the native run's (digests written by
// `cargo test --test simulator`), and the benchmark page runs (its timing is a benchmark, not a test).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { serve, browser, open, ready, screenshot, repo } from './harness.mjs';

let server, url, context, close;

before(async () => {
  ({ server, url } = await serve());
  ({ context, close } = await browser());
});

after(async () => {
  await close();
  server.close();
});

const laneText = (page, i = 0, side = 'a') => page.locator(`.side.${side} .lane[data-lane="${i}"] .decision`).innerText();
const runs = async (page, i = 0, side = 'a') => Number(await page.locator(`.side.${side} .lane[data-lane="${i}"] .runs-count`).getAttribute('data-runs'));
const position = async (page) => Number((await page.locator('#position').innerText()).split(' / ')[0].replace(/,/g, ''));
const total = async (page) => Number((await page.locator('#position').innerText()).split(' / ')[1].split(' ')[0].replace(/,/g, ''));

async function scrubTo(page, p) {
  await page.locator('#scrub').fill(String(p));
  await page.locator('#scrub').dispatchEvent('input');
}

async function setOption(page, key, value) {
  const input = page.locator(`[name="o.${key}"]`);
  if ((await input.evaluate((e) => e.tagName)) === 'SELECT') await input.selectOption(String(value));
  else await input.fill(String(value));
}

async function runSimulation(page) {
  await page.click('#apply');
  await ready(page);
}

/** Clicks the newest decision in the log and returns its position and text. */
async function jumpToLatestDecision(page) {
  const li = page.locator('#log li').first();
  const pos = Number(await li.getAttribute('data-position'));
  await li.click();
  return { pos, text: await li.innerText() };
}

test('a run shows the planner’s decision, the runs and the log', async () => {
  const { page, errors } = await open(context, url);
  assert.equal(await position(page), 0);
  assert.match(await page.locator('#event').innerText(), /no event yet/);
  await page.click('#end');
  const n = await total(page);
  assert.ok(n > 200, `only ${n} events`);
  assert.equal(await position(page), n);
  assert.ok((await page.locator('#log li').count()) > 10);
  const { text } = await jumpToLatestDecision(page);
  assert.match(text, /(size ratio|file number|size amplification): .* → output level \d/);
  // At the decision's position its task is running: the unit is highlighted, the text says why.
  assert.match(await laneText(page), /^compacting: .*→ output level \d/);
  assert.ok((await page.locator('.side.a rect.in-unit').count()) > 0, 'no file of the unit is highlighted');
  assert.ok((await runs(page)) >= 1);
  await screenshot(page, '01-decision');
  assert.deepEqual(errors, []);
  await page.close();
});

test('step, back and scrub move through the timeline', async () => {
  const { page } = await open(context, url);
  await page.click('#step');
  await page.click('#step');
  assert.equal(await position(page), 2);
  assert.match(await page.locator('#event').innerText(), /bucket 0: flush/);
  assert.equal(await runs(page), 2);
  await page.click('#back');
  assert.equal(await position(page), 1);
  assert.equal(await runs(page), 1);
  await scrubTo(page, 120);
  assert.equal(await position(page), 120);
  const at120 = await laneText(page);
  await scrubTo(page, 30);
  await scrubTo(page, 120);
  assert.equal(await laneText(page), at120, 'scrubbing back and forth changes what position 120 shows');
  // Play advances by itself.
  await page.selectOption('#speed', '1000');
  await page.click('#play');
  await page.waitForFunction(() => Number(document.querySelector('#position').textContent.split(' / ')[0].replace(/,/g, '')) > 160);
  await page.click('#play');
  await screenshot(page, '02-scrubbed');
  await page.close();
});

test('changing options changes the decisions', async () => {
  const { page } = await open(context, url);
  const digest = await page.locator('#digest').innerText();
  await setOption(page, 'num-sorted-run.compaction-trigger', 3);
  await setOption(page, 'compaction.size-ratio', 10);
  await runSimulation(page);
  await page.click('#end');
  assert.notEqual(await page.locator('#digest').innerText(), digest);
  assert.match(await page.locator('.side.a .lane-head').first().innerText(), /trigger 3 · stop 6/);
  const { text } = await jumpToLatestDecision(page);
  assert.match(text, /× 110%|trigger 3|size amplification/);
  // A bad value is the planner's typed error, named by key.
  await setOption(page, 'target-file-size', 'huge');
  await runSimulation(page).catch(() => {});
  await page.waitForSelector('#error:not([hidden])');
  assert.match(await page.locator('#error').innerText(), /target-file-size/);
  await page.close();
});

test('a write stall shows when runs exceed the stop trigger', async () => {
  const { page } = await open(context, url);
  await setOption(page, 'num-sorted-run.stop-trigger', 6);
  await page.locator('[name="c.rewrite_mb_per_s"]').fill('4');
  await page.locator('[name="flushes"]').fill('120');
  await runSimulation(page);
  const n = await total(page);
  let found = -1;
  for (let p = 1; p <= n && found < 0; p++) {
    await scrubTo(page, p);
    if (await page.locator('.side.a .stall-indicator').count()) found = p;
  }
  assert.ok(found > 0, 'no stall anywhere in the run');
  assert.equal(await page.locator('.side.a .stall-indicator').innerText(), 'WRITE STALL');
  assert.ok((await runs(page)) > 6, `stalled with ${await runs(page)} runs`);
  assert.match(await page.locator('#event').innerText(), /write stall/);
  assert.match(await laneText(page), /^compacting: /);
  assert.ok((await page.locator('.stall-band').count()) > 0, 'no stall band on the charts');
  await screenshot(page, '03-stall');
  await page.close();
});

test('A/B compares two configurations on the same seed', async () => {
  const { page } = await open(context, url);
  await page.check('[name="ab"]');
  await page.locator('[name="b_options"]').fill('num-sorted-run.compaction-trigger=3\ncompaction.max-size-amplification-percent=100');
  await runSimulation(page);
  await page.click('#end');
  assert.equal(await page.locator('.side').count(), 2);
  assert.match(await page.locator('.side.b h3').innerText(), /compaction-trigger=3/);
  assert.match(await page.locator('.side.b .lane-head').first().innerText(), /trigger 3/);
  const wa = page.locator('tr[data-metric="write amplification"] td');
  assert.equal(await wa.count(), 4);
  const [a, b, diff] = [await wa.nth(1).innerText(), await wa.nth(2).innerText(), await wa.nth(3).innerText()];
  const d = Number.parseFloat(b) - Number.parseFloat(a);
  assert.ok(Math.abs(d) > 0.01, `same write amplification ${a} ${b}`);
  assert.match(diff, d > 0 ? /^\+/ : /^−/);
  assert.match(await page.locator('#digest-b').innerText(), /B [0-9a-f]{16}-\d+/);
  await screenshot(page, '04-ab');
  await page.close();
});

test('a shared URL restores the configuration and the position', async () => {
  const { page } = await open(context, url);
  await page.locator('[name="seed"]').fill('9');
  await page.selectOption('[name="w.dist"]', 'zipf');
  await setOption(page, 'changelog-producer', 'lookup');
  await setOption(page, 'lookup-compact', 'gentle');
  await runSimulation(page);
  await scrubTo(page, 77);
  const text = await laneText(page);
  const event = await page.locator('#event').innerText();
  await page.click('#share');
  await page.waitForTimeout(300);
  const link = page.url();
  assert.match(link, /#s=/);
  const { page: other } = await open(context, link);
  await other.waitForFunction(() => document.querySelector('#position').textContent.startsWith('77 /'));
  assert.equal(await other.locator('[name="seed"]').inputValue(), '9');
  assert.equal(await other.locator('[name="o.lookup-compact"]').inputValue(), 'gentle');
  assert.equal(await laneText(other), text);
  assert.equal(await other.locator('#event').innerText(), event);
  await screenshot(other, '05-shared-url');
  await page.close();
  await other.close();
});

function replayDoc() {
  const hex = (v) => (BigInt.asUintN(64, BigInt(v)) ^ (1n << 63n)).toString(16).padStart(16, '0');
  const file = (name, level, mb, min, max, seq) => ({
    file_name: name, file_size: mb * 1048576, row_count: mb * 8192, min_key: hex(min), max_key: hex(max),
    min_sequence_number: seq, max_sequence_number: seq + 10, level, delete_row_count: 0, creation_time_ms: 1767225600000 + seq,
  });
  return {
    format: 'paimon-compact-table', version: 1, table: 'db.orders', table_kind: 'primary-key',
    options: { 'num-sorted-run.compaction-trigger': '3' },
    snapshots: [
      { id: 1, commit_kind: 'APPEND', time_ms: 1767225600000, changes: [{ bucket: 0, added: [file('a', 0, 40, 0, 1000000, 1)] }] },
      { id: 2, commit_kind: 'APPEND', time_ms: 1767225660000, changes: [{ bucket: 0, added: [file('b', 0, 40, 0, 1000000, 20)] }] },
      { id: 3, commit_kind: 'COMPACT', time_ms: 1767225720000, changes: [{ bucket: 0, added: [file('ab', 2, 70, 0, 1000000, 1)], deleted: ['a', 'b'] }] },
      { id: 4, commit_kind: 'APPEND', time_ms: 1767225780000, changes: [{ bucket: 0, added: [file('d', 0, 40, 0, 1000000, 40), file('e', 0, 40, 0, 1000000, 60)] }] },
    ],
  };
}

test('a table is replayed, then the planner goes on', async () => {
  const { page } = await open(context, url);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pc-replay-'));
  const json = path.join(dir, 'orders.json');
  fs.writeFileSync(json, JSON.stringify(replayDoc()));
  await page.locator('[name="w.key_space"]').fill('2000000');
  await page.setInputFiles('#replay-file', json);
  await page.waitForFunction(() => document.querySelector('#replay-status').textContent.startsWith('Loaded'));
  await ready(page);
  assert.match(await page.locator('#replay-status').innerText(), /Loaded db\.orders \(orders\.json\): 4 snapshots, 1 bucket/);
  await scrubTo(page, 3);
  assert.match(await page.locator('#event').innerText(), /snapshot replayed/);
  assert.equal(await runs(page), 1);
  assert.deepEqual(await page.locator('.side.a rect[data-file]').evaluateAll((r) => r.map((x) => x.dataset.file)), ['ab']);
  await scrubTo(page, 4);
  assert.equal(await runs(page), 3);
  assert.match(await page.locator('#event').innerText(), /the planner would pick: /);
  await screenshot(page, '06-replay');
  // After the history, writers flush and the planner decides for real.
  await page.click('#end');
  const texts = await page.locator('#log li').allInnerTexts();
  assert.ok(texts.some((t) => !t.includes('would pick') && / → output level /.test(t)), texts.slice(0, 3).join('\n'));
  // The same table picked as a folder.
  await page.setInputFiles('#replay-dir', dir);
  await page.waitForFunction(() => /\(pc-replay-\w+\/orders\.json\)/.test(document.querySelector('#replay-status').textContent));
  await ready(page);
  await page.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a real table\'s plan (paimon-compact plan --json) is replayed as it is', async () => {
  // Demo Paimon tables written by the CLI built in stage 10; their plan JSON embeds the
  // table's timeline, which the page loads without any conversion.
  const cli = process.env.PAIMON_COMPACT_CLI ?? path.join(repo, 'target', 'release', 'paimon-compact');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pc-real-'));
  execFileSync(cli, ['--engine', 'native', 'demo', '--dir', dir, '--no-compact', '--json']);
  const planJson = execFileSync(cli, ['--engine', 'native', 'plan', path.join(dir, 'demo.db', 'metrics'), '--json']);
  const file = path.join(dir, 'metrics-plan.json');
  fs.writeFileSync(file, planJson);
  const { page } = await open(context, url);
  await page.setInputFiles('#replay-file', file);
  await page.waitForFunction(() => document.querySelector('#replay-status').textContent.startsWith('Loaded'));
  await ready(page);
  assert.match(await page.locator('#replay-status').innerText(), /Loaded metrics \(metrics-plan\.json\): 6 snapshots, 2 buckets/);
  await screenshot(page, '07-real-table');
  await page.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the browser’s decisions equal the native planner’s', async (t) => {
  const file = process.env.SIM_DIGESTS || path.join(repo, 'target', 'tmp', 'sim-digests.json');
  if (!fs.existsSync(file)) {
    assert.fail(`${file} is missing: run \`cargo test --test simulator\` first (it writes the native digests)`);
  }
  const native = JSON.parse(fs.readFileSync(file, 'utf8'));
  const configs = JSON.parse(fs.readFileSync(path.join(repo, 'tests', 'e2e', 'digest-configs.json'), 'utf8'));
  const { page } = await open(context, url);
  for (const { name, config } of configs) {
    const digest = await page.evaluate(async (cfg) => {
      const { load } = await import('./pkg/loader.js');
      const pc = await load();
      const sim = new pc.WebSimulation(cfg);
      while (!sim.finished) sim.advance(100000);
      const d = sim.digest();
      sim.free();
      return d;
    }, config);
    assert.equal(digest, native[name], `${name}: browser ${digest} vs native ${native[name]}`);
    t.diagnostic(`${name}: ${digest}`);
  }
  await page.close();
});

// Timing is measured by the benchmark (`node bench.mjs`, 1 000 000 flushes; figures in
// benches/README.md), never asserted here: this checks the benchmark page itself works.
test('the benchmark page simulates and reports its figures', async (t) => {
  const page = await context.newPage();
  await page.goto(`${url}bench.html?auto=1&flushes=20000`);
  await page.waitForFunction(() => document.body.dataset.result, null, { timeout: 120000 });
  const result = JSON.parse(await page.evaluate(() => document.body.dataset.result));
  t.diagnostic(`20k flushes: ${result.ms} ms, ${result.events} events, ${result.decisions} decisions`);
  assert.ok(result.events >= 20000, JSON.stringify(result));
  assert.ok(result.decisions > 0, JSON.stringify(result));
  assert.ok(Number.isFinite(result.ms) && result.ms > 0, JSON.stringify(result));
  await page.close();
});
