// The official openai package's audio API against voiced: speech (wav) → transcriptions.
// Usage: VOICED_BASE_URL=http://host:port/v1 VOICED_API_KEY=<service token> node speech.mjs "<text>"
// Prints one JSON line: {"bytes": <wav bytes>, "text": <transcription>, "verbose": <verbose_json text>}.
import OpenAI, { toFile } from 'openai';

const client = new OpenAI({ baseURL: process.env.VOICED_BASE_URL, apiKey: process.env.VOICED_API_KEY, maxRetries: 0 });
const input = process.argv[2];

const speech = await client.audio.speech.create({ model: 'tts-1', voice: 'alloy', input, response_format: 'wav' });
const wav = Buffer.from(await speech.arrayBuffer());
const json = await client.audio.transcriptions.create({ file: await toFile(wav, 'speech.wav'), model: 'whisper-1' });
const verbose = await client.audio.transcriptions.create({
  file: await toFile(wav, 'speech.wav'), model: 'whisper-1', response_format: 'verbose_json',
});
console.log(JSON.stringify({ bytes: wav.length, text: json.text, verbose: verbose.text, duration: verbose.duration }));
