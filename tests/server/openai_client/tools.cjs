// OpenAI's official Node client (the `openai` npm package, pinned in package.json) against a
// running unmask-server with the bundled model: tool calls returned as OpenAI's tool_calls, a call
// that breaks its tool's schema reported and not passed on, tool_choice none, auto, required and
// named, streamed tool-call deltas, and a refused request as the client's APIError.
// usage: node tools.cjs BASE_URL          (exits 1 with a line per failure)
const assert = require("node:assert/strict");
const OpenAI = require("openai");

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "unused", maxRetries: 0 });
const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather forecast for a city on a date",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, date: { type: "string", description: "ISO date" } },
      required: ["city"],
      additionalProperties: false,
    },
  },
};
const timer = {
  type: "function",
  function: {
    name: "set_timer",
    parameters: { type: "object", properties: { minutes: { type: "integer", minimum: 1 }, label: { type: "string" } } },
  },
};
const weatherRequest = [{ role: "user", content: "What's the weather in Lisbon on May 14?" }];
const base = { model: "toolcall-llada-3m", max_tokens: 128 };

const cases = {
  async "a tool call comes back as tool_calls with finish_reason tool_calls"() {
    const r = await client.chat.completions.create({ ...base, messages: weatherRequest, tools: [weather, timer] });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, "tool_calls");
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.type, "function");
    assert.match(call.id, /^call_/);
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), { city: "Lisbon", date: "2026-05-14" });
  },
  async "a call that breaks its tool's schema is reported, not returned as a call"() {
    const strict = structuredClone(weather);
    strict.function.parameters.properties.city = { type: "integer" };
    const r = await client.chat.completions.create({ ...base, messages: weatherRequest, tools: [strict] });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, "stop");
    assert.equal(choice.message.tool_calls, undefined);
    assert.match(choice.message.content, /"name": "get_weather"/);
    assert.match(r.unmask.tool_call_error, /arguments\.city: must be integer, got a string/);
  },
  async "tool_choice none leaves the answer as text"() {
    const r = await client.chat.completions.create({ ...base, messages: weatherRequest, tools: [weather], tool_choice: "none" });
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.equal(r.choices[0].message.tool_calls, undefined);
    assert.equal(typeof r.choices[0].message.content, "string");
  },
  async "tool_choice required and a named tool return the call they ask for"() {
    const required = await client.chat.completions.create({ ...base, messages: weatherRequest, tools: [weather], tool_choice: "required" });
    assert.equal(required.choices[0].message.tool_calls[0].function.name, "get_weather");
    const named = await client.chat.completions.create({
      ...base,
      messages: [{ role: "user", content: "Set a timer for 25 minutes for the pasta." }],
      tools: [weather, timer],
      tool_choice: { type: "function", function: { name: "set_timer" } },
    });
    assert.equal(named.choices[0].finish_reason, "tool_calls");
    const call = named.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, "set_timer");
    assert.equal(JSON.parse(call.function.arguments).minutes, 25);
  },
  async "a named tool_choice the answer does not follow is reported"() {
    const r = await client.chat.completions.create({
      ...base, messages: weatherRequest, tools: [weather, timer], tool_choice: { type: "function", function: { name: "set_timer" } },
    });
    assert.equal(r.choices[0].finish_reason, "stop");
    assert.equal(r.choices[0].message.tool_calls, undefined);
    assert.match(r.unmask.tool_call_error, /asks for set_timer/);
  },
  async "streamed tool calls arrive as deltas the client assembles"() {
    const stream = await client.chat.completions.create({ ...base, messages: weatherRequest, tools: [weather], stream: true });
    const calls = [];
    let finish = null, role = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      role = role ?? choice.delta.role ?? null;
      for (const delta of choice.delta.tool_calls ?? []) {
        const call = (calls[delta.index] ??= { id: "", name: "", arguments: "" });
        call.id += delta.id ?? "";
        call.name += delta.function?.name ?? "";
        call.arguments += delta.function?.arguments ?? "";
      }
      finish = choice.finish_reason ?? finish;
    }
    assert.equal(role, "assistant");
    assert.equal(finish, "tool_calls");
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, "get_weather");
    assert.equal(JSON.parse(calls[0].arguments).city, "Lisbon");
  },
  // The bundled model was trained on single requests: the earlier turns are accepted and rendered
  // by its chat template, but its answer to the last one is not checked here.
  async "a conversation with an earlier call is accepted"() {
    const r = await client.chat.completions.create({
      ...base,
      messages: [
        { role: "user", content: "Set a timer for 5 minutes for the tea." },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "set_timer", arguments: "{\"minutes\": 5}" } }] },
        { role: "user", content: "What's the weather in Lisbon on May 14?" },
      ],
      tools: [weather, timer],
    });
    assert.ok(["tool_calls", "stop"].includes(r.choices[0].finish_reason));
    assert.equal(r.choices[0].message.role, "assistant");
  },
  async "tool_choice without tools is refused as the client's APIError naming the field"() {
    await assert.rejects(
      client.chat.completions.create({ ...base, messages: weatherRequest, tool_choice: "required" }),
      (error) => error instanceof OpenAI.APIError && error.status === 400 && error.param === "tool_choice");
  },
};

(async () => {
  let failures = 0;
  for (const [name, run] of Object.entries(cases)) {
    try {
      await run();
      console.log("ok: " + name);
    } catch (error) {
      failures += 1;
      console.log("FAILED: " + name + ": " + (error.stack || error));
    }
  }
  process.exit(failures ? 1 : 0);
})();
