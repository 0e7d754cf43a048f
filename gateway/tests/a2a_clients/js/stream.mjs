// A streaming message end to end with the official @a2a-js/sdk client (pinned in
// package-lock.json): card discovery, SendStreamingMessage over SSE, every event parsed by the
// SDK, artifacts and the final status checked. Usage: node stream.mjs BASE_URL
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';

const base = process.argv[2];
let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) { passed++; console.log(`PASS js: ${name}`); }
  else { failed++; console.log(`FAIL js: ${name}: ${detail ?? ''}`); }
}

try {
  const client = await new ClientFactory().createFromUrl(base);
  const events = [];
  for await (const ev of client.sendMessageStream({
    message: { messageId: `js-${Date.now()}`, role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: 'artifacts please' } }] },
  })) {
    events.push(ev.payload);
  }
  check('stream starts with the task', events[0]?.$case === 'task', JSON.stringify(events[0]));
  const last = events[events.length - 1];
  check('stream ends completed', last?.$case === 'statusUpdate' && last.value.status.state === TaskState.TASK_STATE_COMPLETED, JSON.stringify(last));
  const finalText = (last?.value?.status?.message?.parts ?? []).map((p) => p.content?.value).join('');
  check('final status carries the text', finalText === 'Here are your artifacts.', finalText);
  const notes = events.filter((e) => e.$case === 'artifactUpdate' && e.value.artifact.artifactId === 'notes')
    .map((e) => e.value.artifact.parts[0].content.value).join('');
  check('chunked text artifact', notes === 'alpha beta gamma delta', notes);
  const blob = events.find((e) => e.$case === 'artifactUpdate' && e.value.artifact.artifactId === 'blob');
  check('file artifact bytes', blob && Buffer.from(blob.value.artifact.parts[0].content.value).toString() === 'hello world!');
  const link = events.find((e) => e.$case === 'artifactUpdate' && e.value.artifact.artifactId === 'link');
  check('file-url artifact', link?.value.artifact.parts[0].content.value === 'https://example.com/report.pdf');
  const task = await client.getTask({ id: events[0].value.id, historyLength: 1 });
  check('getTask after the stream', task.status.state === TaskState.TASK_STATE_COMPLETED && task.history.length === 1, JSON.stringify(task.status));
} catch (e) {
  check('session', false, e?.stack ?? String(e));
}
console.log(`js: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
