// A bench peer: the official @a2a-js/sdk server (express) with an echo executor, doing what
// peer-a2a's minimal mode does (one artifact `You said: <text>`, then COMPLETED), on
// 127.0.0.1:PORT (JSON-RPC at POST /a2a). Usage: node server.mjs PORT
import express from "express";
import { TaskState } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";

const port = Number(process.argv[2]);
const url = `http://127.0.0.1:${port}/a2a`;

const card = {
  name: "bench-echo",
  description: "echo",
  version: "1.0.0",
  supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "echo", description: "answers 'You said: <text>'", tags: ["echo"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  securitySchemes: {},
  securityRequirements: [],
  signatures: [],
};

const textOf = (message) =>
  (message?.parts ?? []).map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");

class Echo {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const message = ctx.userMessage;
    if (!ctx.task) {
      bus.publish(AgentEvent.task({
        id: taskId, contextId, history: [message], artifacts: [], metadata: undefined,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      }));
    }
    bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: `${taskId}-output`, name: "output", description: "", parts: [{ content: { $case: "text", value: `You said: ${textOf(message)}` } }], metadata: undefined, extensions: [] },
    }));
    bus.publish(AgentEvent.statusUpdate({
      taskId, contextId, metadata: undefined,
      status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
    }));
    bus.finished();
  }
  async cancelTask() {}
}

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Echo());
const app = express();
app.get("/healthz", (_req, res) => res.send("ok"));
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
app.use("/a2a", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.listen(port, "127.0.0.1");
