// The real octokit (@octokit/rest with @octokit/plugin-throttling), driven by
// tests/serve/test_real_clients.py against `git sluice serve`'s TCP port.
//
// Reads a plan (JSON) on stdin:
//   {"baseUrl": "http://127.0.0.1:PORT", "token": "…", "now": <epoch s, optional>,
//    "steps": [{"route": "GET /repos/{owner}/{repo}/pulls", "params": {…}, "paginate": false}, …]}
// and prints one JSON document on stdout: each step's outcome (status, the
// headers serve answered with, the body's length when it is a list) and every
// call of the throttling plugin's handlers, with the retryAfter it computed.
//
// The handlers record and return false (no retry), so a test never waits out
// a real interval. "now" is the test's clock: the plugin computes a spent
// limit's retryAfter from x-ratelimit-reset against Date.now(), and the test
// and serve share a fake clock, so Date.now() reads that clock (held still:
// one plan is a moment of the test's time).
import { Octokit } from "@octokit/rest";
import { throttling } from "@octokit/plugin-throttling";

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

const plan = JSON.parse(await readStdin());
if (typeof plan.now === "number") {
  const heldMs = Math.round(plan.now * 1000);
  Date.now = () => heldMs;
}

const handled = [];
const record = (event) => (retryAfter, options, _octokit, retryCount) => {
  handled.push({ event, retryAfter, method: options.method, url: options.url, retryCount });
  return false;
};

const ThrottledOctokit = Octokit.plugin(throttling);
const octokit = new ThrottledOctokit({
  baseUrl: plan.baseUrl,
  auth: plan.token,
  userAgent: "git-sluice-tests",
  log: { debug() {}, info() {}, warn() {}, error() {} },
  throttle: { onRateLimit: record("onRateLimit"), onSecondaryRateLimit: record("onSecondaryRateLimit") },
});

const results = [];
for (const step of plan.steps) {
  try {
    if (step.paginate) {
      const items = await octokit.paginate(step.route, step.params ?? {});
      results.push({ ok: true, status: 200, length: items.length });
    } else {
      const answer = await octokit.request(step.route, step.params ?? {});
      results.push({
        ok: true,
        status: answer.status,
        headers: answer.headers,
        length: Array.isArray(answer.data) ? answer.data.length : null,
      });
    }
  } catch (error) {
    results.push({
      ok: false,
      status: error.status ?? null,
      message: String(error.message ?? error),
      headers: error.response?.headers ?? null,
    });
  }
}
process.stdout.write(JSON.stringify({ results, handled }) + "\n");
process.exit(0);
