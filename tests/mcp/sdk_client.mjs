// Drives mnemo's MCP server with the official MCP TypeScript SDK client,
// over stdio (mnemo mcp) or Streamable HTTP (mnemo serve, /mcp).
//   node sdk_client.mjs stdio MNEMO WORKSPACE DB
//   node sdk_client.mjs http URL
// Prints one line per check and exits non-zero on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
let checks = 0;
function check(cond, what, detail) {
  if (!cond) {
    console.error(`FAIL ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
    process.exit(1);
  }
  checks++;
  console.log(`ok ${what}`);
}

const transport = mode === "stdio"
  ? new StdioClientTransport({ command: rest[0], args: ["--workspace", rest[1], "--db", rest[2], "mcp"], stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(rest[0] + "/mcp"));
const client = new Client({ name: "mnemo-test", version: "1.0.0" });
const timer = setTimeout(() => { console.error("FAIL timeout"); process.exit(2); }, 30000);
await client.connect(transport);

check(client.getServerVersion()?.name === "mnemo", "server name", client.getServerVersion());
check(client.getServerCapabilities()?.tools !== undefined, "tools capability");

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
check(JSON.stringify(names) === JSON.stringify(["memory_add", "memory_delete", "memory_get", "memory_list",
  "memory_recall", "memory_restore", "memory_search", "memory_status", "memory_update"]), "nine tools", names);
check(tools.every((t) => t.inputSchema?.type === "object" && t.inputSchema.additionalProperties === false),
  "schemas close their properties");

// Every tool and argument is described; structured replies have a schema.
for (const t of tools) {
  check(typeof t.description === "string" && t.description.length > 20, `${t.name} described`, t.description);
  const bare = Object.entries(t.inputSchema.properties ?? {}).filter(([, p]) => !(p.description?.length > 5));
  check(bare.length === 0, `${t.name} arguments described`, bare.map(([k]) => k));
  check(t.outputSchema?.type === "object", `${t.name} outputSchema`, t.outputSchema);
}
const ms = tools.find((t) => t.name === "memory_search");
check(ms.description.includes("Mode here: keyword") && ms.description.includes("3-6 signal words"),
  "memory_search says its real mode and the recall protocol", ms.description);

let r = await client.callTool({ name: "memory_search", arguments: { query: "zephyr", maxResults: 3 } });
check(!r.isError, "memory_search ok", r);
check(r.structuredContent?.results?.[0]?.citation?.startsWith("MEMORY.md#L"), "search cites MEMORY.md", r.structuredContent);
check(r.content?.[0]?.type === "text" && r.content[0].text.includes("zephyr"), "search text", r.content);

// Every citation a search gives reads back exactly its lines.
for (const hit of r.structuredContent.results.filter((h) => h.kind === "note")) {
  const g = await client.callTool({ name: "memory_get", arguments: { path: hit.citation } });
  check(!g.isError && g.structuredContent.path === hit.path && g.structuredContent.from === hit.startLine &&
    g.structuredContent.to === hit.endLine, `memory_get ${hit.citation}`, g);
}

r = await client.callTool({ name: "memory_get", arguments: { path: "MEMORY.md", from: 1, lines: 2 } });
check(!r.isError && r.structuredContent.from === 1 && r.structuredContent.to === 2, "memory_get", r);

r = await client.callTool({ name: "memory_add", arguments: { text: "The on-call rotation changes on Mondays", category: "operational" } });
check(!r.isError && typeof r.structuredContent?.id === "string", "memory_add", r);
const id = r.structuredContent.id;
r = await client.callTool({ name: "memory_update", arguments: { id, text: "The on-call rotation changes on Tuesdays" } });
check(!r.isError && r.structuredContent.text.includes("Tuesdays"), "memory_update", r);
r = await client.callTool({ name: "memory_list", arguments: { limit: 10 } });
check(!r.isError && r.structuredContent.memories.some((m) => m.id === id), "memory_list", r);
r = await client.callTool({ name: "memory_recall", arguments: { message: "when does the on-call rotation change?" } });
check(!r.isError && r.structuredContent.recalled.includes("Tuesdays"), "memory_recall", r);
r = await client.callTool({ name: "memory_delete", arguments: { id } });
check(!r.isError && r.structuredContent.deleted === id, "memory_delete", r);
r = await client.callTool({ name: "memory_status", arguments: {} });
check(!r.isError && typeof r.structuredContent === "object", "memory_status", r);
check(/^Index: \d+ files, \d+ chunks, last sync /.test(r.content[0].text) && r.content[0].text.includes("Memories: "),
  "memory_status reads as text, the JSON in structuredContent", r.content);

// Deleted is not gone: listed with deleted, marked when read, restored.
r = await client.callTool({ name: "memory_list", arguments: { deleted: true } });
check(!r.isError && r.structuredContent.memories.length === 1 && r.structuredContent.memories[0].id === id &&
  r.content[0].text.startsWith("1 memory:") && r.content[0].text.includes("deleted 20"), "memory_list deleted: the deleted ones only", r);
r = await client.callTool({ name: "memory_get", arguments: { path: `memory://${id}` } });
check(!r.isError && r.content[0].text.startsWith("[deleted ") && r.content[0].text.includes("Tuesdays"),
  "a deleted fact is marked when read", r.content);
r = await client.callTool({ name: "memory_restore", arguments: { id } });
check(!r.isError && r.structuredContent.deleted_at === null && r.content[0].text.startsWith("Restored: "), "memory_restore", r);
r = await client.callTool({ name: "memory_list", arguments: { limit: 10 } });
check(!r.isError && r.structuredContent.memories.some((m) => m.id === id) && !r.content[0].text.startsWith("{"),
  "restored: listed again, in words", r);
r = await client.callTool({ name: "memory_restore", arguments: { id } });
check(r.isError === true && r.content[0].text.includes("is not deleted"), "restoring a live memory is a tool error", r);
r = await client.callTool({ name: "memory_delete", arguments: { id } });
check(!r.isError && r.content[0].text.includes("memory_restore"), "memory_delete says how to undo", r.content);

// One memory: a stored fact is found by memory_search, beside the notes.
r = await client.callTool({ name: "memory_add", arguments: { text: "User prefers tea over coffee", category: "preference", importance: 0.85 } });
check(!r.isError && r.content[0].text.includes("0.85") && !r.content[0].text.includes("0.8499"), "numbers as written", r.content);
check(r.content[0].text.startsWith("Stored: User prefers tea over coffee (id: "), "memory_add reads as text", r.content);
const tea = r.structuredContent.id;
r = await client.callTool({ name: "memory_search", arguments: { query: "tea coffee" } });
let top = r.structuredContent?.results?.[0];
check(!r.isError && top?.kind === "fact" && top.id === tea && top.citation === `memory://${tea}` &&
  top.category === "preference" && top.scope === "long-term" && typeof top.updated_at === "string",
  "memory_search finds the stored fact", r.structuredContent);
check(r.content[0].text.includes(`memory://${tea}`) && r.content[0].text.includes("tea over coffee"), "the fact in the text", r.content);
r = await client.callTool({ name: "memory_search", arguments: { query: "tea coffee", categories: ["decision"] } });
check(!r.isError && !r.structuredContent.results.some((x) => x.kind === "fact"), "categories restrict the facts", r.structuredContent);
r = await client.callTool({ name: "memory_search", arguments: { query: "tea coffee", filters: { category: "preference" }, userId: "default", kinds: "fact" } });
check(!r.isError && r.structuredContent.results.length === 1 && r.structuredContent.results[0].id === tea &&
  JSON.stringify(r.structuredContent.kinds) === '["fact"]', "filters, userId and kinds", r.structuredContent);
r = await client.callTool({ name: "memory_search", arguments: { query: "zephyr", kinds: "note" } });
check(!r.isError && r.structuredContent.results.every((x) => x.kind === "note"), "kinds: note", r.structuredContent);
r = await client.callTool({ name: "memory_get", arguments: { path: `memory://${tea}` } });
check(!r.isError && r.content[0].text === "User prefers tea over coffee", "memory_get reads memory://id", r);
// A newer fact ranks above the older note it replaces.
r = await client.callTool({ name: "memory_add", arguments: { text: "User's favourite editor is Helix", category: "preference" } });
check(!r.isError, "memory_add Helix", r);
r = await client.callTool({ name: "memory_search", arguments: { query: "favourite editor" } });
const res = r.structuredContent?.results ?? [];
const helix = res.findIndex((x) => x.kind === "fact" && x.snippet.includes("Helix"));
const neovim = res.findIndex((x) => x.kind === "note" && x.snippet.includes("Neovim"));
check(!r.isError && helix === 0 && neovim > helix, "the newer fact above the note it replaces", res);
r = await client.callTool({ name: "memory_get", arguments: { path: "MEMORY.md", from: 0 } });
check(r.isError === true && r.content[0].text.includes("from must be at least 1"), "errors in words", r.content);

// Tool errors are results the model can read; the session goes on.
r = await client.callTool({ name: "memory_search", arguments: { query: "x", maxResult: 3 } });
check(r.isError === true && r.content[0].text.includes("unknown argument 'maxResult'"), "bad arguments are a tool error", r);
r = await client.callTool({ name: "memory_delete", arguments: { id } });
check(r.isError === true && r.content[0].text.includes("not_found"), "deleting twice is a tool error", r);
r = await client.callTool({ name: "memory_get", arguments: { path: "../../etc/passwd" } });
check(r.isError === true && r.content[0].text.includes("denied"), "paths stay in the memory roots", r);
let threw = null;
try { await client.callTool({ name: "no_such_tool", arguments: {} }); } catch (e) { threw = e; }
check(threw && threw.code === -32602, "unknown tool is a protocol error", threw && threw.message);
r = await client.callTool({ name: "memory_search", arguments: { query: "zephyr" } });
check(!r.isError, "still serving after errors");
await client.ping();
check(true, "ping");

clearTimeout(timer);
await client.close();
console.log(`${checks} checks passed`);
