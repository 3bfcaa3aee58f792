// The 1M-flush benchmark in headless Chromium: prints the JSON result of www/bench.html.
// Usage: node bench.mjs [flushes]   (default 1 000 000)
import { serve, browser } from './harness.mjs';

const flushes = Number(process.argv[2] || 1000000);
const { server, url } = await serve();
const { context, close } = await browser();
try {
  const page = await context.newPage();
  await page.goto(`${url}bench.html?auto=1&flushes=${flushes}`);
  await page.waitForFunction(() => document.body.dataset.result, null, { timeout: 300000 });
  console.log(await page.evaluate(() => document.body.dataset.result));
} finally {
  await close();
  server.close();
}
