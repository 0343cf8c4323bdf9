// The OpenAI Agents SDK's WebSocket transport in Node, unchanged, pointed at voiced with a hosted
// MCP tool (hostedMcpTool): voiced lists the MCP server the Go test started, runs the mind's call
// (after the SDK approves it, with MCP_APPROVAL=always) and the next reply, which the SDK asks for
// on the call's conversation.item.done, says the tool's result. tests/mcp_test.go runs this.
// Every server event is also checked against the SDK's own zod schema. Prints one JSON line.
import { OpenAIRealtimeWebSocket, RealtimeAgent, RealtimeSession } from '@openai/agents-realtime';
import { hostedMcpTool } from '@openai/agents-core';

// The SDK's event schemas (not among its package exports: imported by file).
const { realtimeServerEventSchema } = await import(
  new URL('./node_modules/@openai/agents-realtime/dist/openaiRealtimeEvents.mjs', import.meta.url)
);

const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');
const approval = process.env.MCP_APPROVAL ?? 'never';
const state = { listed: [], approvals: 0, calls: [], schemaFailures: [], types: [], errors: [], reply: '' };

const agent = new RealtimeAgent({
  name: 'orders',
  instructions: 'Answer questions about orders with the orders tools.',
  tools: [
    hostedMcpTool({
      serverLabel: 'orders',
      serverUrl: process.env.MCP_URL,
      authorization: 'tok-e2e',
      allowedTools: ['lookup_order'],
      requireApproval: approval,
    }),
  ],
});
const transport = new OpenAIRealtimeWebSocket({ url: process.env.VOICED_WS_URL });
const session = new RealtimeSession(agent, { transport, model: 'gpt-realtime' });

transport.on('*', (ev) => {
  state.types.push(ev.type);
  const r = realtimeServerEventSchema.safeParse(ev);
  if (!r.success) state.schemaFailures.push({ type: ev.type, issues: r.error.issues.slice(0, 3) });
});
session.on('error', (e) => state.errors.push(String(e?.error?.error?.message ?? e?.error?.message ?? e?.error ?? e)));
session.on('mcp_tools_changed', (tools) => {
  state.listed = tools.map((t) => t.name);
});
session.on('tool_approval_requested', (_ctx, _agent, req) => {
  state.approvals++;
  session.approve(req.approvalItem).catch((e) => state.errors.push(`approve: ${e}`));
});
session.on('mcp_tool_call_completed', (_ctx, _agent, call) => {
  state.calls.push({ name: call.name, arguments: call.arguments, output: call.output });
});

const done = new Promise((resolve) => {
  session.on('history_updated', (history) => {
    for (const item of history) {
      if (item.type !== 'message' || item.role !== 'assistant' || item.status !== 'completed') continue;
      const text = (item.content ?? []).map((c) => c.transcript ?? c.text ?? '').join(' ');
      if (text.includes('Zanzibar')) {
        state.reply = text;
        resolve();
      }
    }
  });
});

try {
  await session.connect({ apiKey: process.env.VOICED_JWT });
  // The listing arrives as mcp_tools_changed; ask once the tool is there.
  for (let i = 0; i < 200 && !state.listed.includes('lookup_order'); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  session.sendMessage('Where is my order A17?');
  await Promise.race([done, new Promise((r) => setTimeout(r, 40000))]);
} catch (e) {
  state.errors.push(`run: ${e?.message ?? e}`);
} finally {
  out(state);
  session.close();
  process.exit(0);
}
