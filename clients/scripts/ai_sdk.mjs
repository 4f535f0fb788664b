// The Vercel AI SDK against the gateway: generateText and streamText with a tool the SDK runs
// itself (stopWhen: a second step answers with the tool's result), on the OpenAI chat and
// Responses providers and the Anthropic provider. Prints one JSON line of what it saw.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";

const { GATEWAY_URL: url, GATEWAY_KEY: apiKey, MODEL: model } = process.env;
const [provider, mode] = process.argv.slice(2);

const openai = createOpenAI({ baseURL: `${url}/v1`, apiKey });
const anthropic = createAnthropic({ baseURL: `${url}/v1`, apiKey });
const models = {
  chat: () => openai.chat(model),
  responses: () => openai.responses(model),
  anthropic: () => anthropic(model),
};

const getWeather = tool({
  description: "Weather for a city",
  inputSchema: jsonSchema({
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
  }),
  execute: async ({ city }) => `sunny in ${city}`,
});

const options = {
  model: models[provider](),
  prompt: "Weather in Oslo?",
  tools: { get_weather: getWeather },
  stopWhen: stepCountIs(3),
  maxRetries: 0,
};

if (mode === "stream") {
  const result = streamText(options);
  let text = "";
  for await (const delta of result.textStream) text += delta;
  console.log(JSON.stringify({ text, steps: (await result.steps).length }));
} else {
  const result = await generateText(options);
  console.log(JSON.stringify({ text: result.text, steps: result.steps.length }));
}
