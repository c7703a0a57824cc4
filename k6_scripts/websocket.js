// test "websocket" (servers/README.md, "WebSocket"), k6's way: each VU opens one
// WebSocket to BENCH_BASE_URL's /ws/ (token in the handshake) and keeps one text message
// of BENCH_SIZE bytes in flight for the whole window: sent, echoed, compared, timed, the
// next. The harness's own client (tools/wsload, bench/load/wsload.py) does the same with
// less CPU and microsecond timing; this script is there to measure k6 against it
// (docs/tests-measured.md, "websocket").
//
// Metrics (bench/load/k6_websocket.py reads them from the K6_JSON summary line):
//   bench_ws_sent, bench_ws_echoed   messages written, echoes received (any content)
//   bench_ws_rtt                     each echo's round trip, ms (JavaScript's Date.now:
//                                    whole milliseconds, all k6 has)
//   bench_error_<kind>               connect (a handshake that failed), read (the
//                                    connection broke), status (an echo not the message)
import { WebSocket } from 'k6/websockets';
import exec from 'k6/execution';
import { Counter, Trend } from 'k6/metrics';
import { counters, env, scenario } from './common.js';

const sent = new Counter('bench_ws_sent');
const echoed = new Counter('bench_ws_echoed');
const rtt = new Trend('bench_ws_rtt', true);

export const options = {
  scenarios: { bench: scenario() },
  ...(env('BENCH_TLS13', '0') === '1'
    ? { tlsVersion: { min: 'tls1.3', max: 'tls1.3' } } : {}),
  summaryTrendStats: ['min', 'avg', 'max', 'med', 'p(50)', 'p(75)', 'p(90)', 'p(99)',
                      'p(99.9)', 'count'],
};

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const url = env('BENCH_BASE_URL', 'http://127.0.0.1:8080').replace(/^http/, 'ws') + '/ws/';
const windowMs = parseFloat(env('BENCH_DURATION', '10')) * 1000;

export default function () {
  const left = windowMs - exec.instance.currentTestRunDuration;
  if (left <= 0) return;
  let message = '';
  const size = parseInt(env('BENCH_SIZE', '32'), 10);
  for (let k = 0; k < size; k++) message += ALPHABET[(k * 7 + __VU) % ALPHABET.length];
  const ws = new WebSocket(url, null, { headers: { token: env('BENCH_TOKEN', '') } });
  let at = 0;
  let open = false;
  let done = false;
  function send() {
    at = Date.now();
    ws.send(message);
    sent.add(1);
  }
  ws.onopen = () => {
    open = true;
    send();
    setTimeout(() => { done = true; ws.close(); }, left);
  };
  ws.onmessage = (event) => {
    rtt.add(Date.now() - at);
    echoed.add(1);
    if (event.data !== message) counters.status.add(1);
    if (!done) send();
  };
  ws.onerror = () => { counters[open ? 'read' : 'connect'].add(1); };
}

export function handleSummary(data) {
  return { stdout: 'K6_JSON ' + JSON.stringify(data) + '\n' };
}
