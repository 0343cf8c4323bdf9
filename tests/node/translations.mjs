// The official openai package's audio.translations.create against voiced (issue 21): speaks
// <text> with audio.speech.create in <voice> (WAV), then translates that speech in json,
// verbose_json and text, and transcribes it with language "auto" in verbose_json for comparison.
// Usage: VOICED_BASE_URL=http://host:port/v1 VOICED_API_KEY=<token> node translations.mjs <voice> "<text>"
// Prints one JSON line: {"json": {...}, "verbose": {...}, "text": "...", "transcription": {...}}.
import OpenAI, { toFile } from 'openai';

const client = new OpenAI({ baseURL: process.env.VOICED_BASE_URL, apiKey: process.env.VOICED_API_KEY, maxRetries: 0 });
const [voice, input] = process.argv.slice(2);

const speech = await client.audio.speech.create({ model: 'tts-1', voice, input, response_format: 'wav' });
const wav = Buffer.from(await speech.arrayBuffer());
const file = () => toFile(wav, 'speech.wav');

const json = await client.audio.translations.create({ file: await file(), model: 'whisper-1' });
const verbose = await client.audio.translations.create({ file: await file(), model: 'whisper-1', response_format: 'verbose_json' });
const text = await client.audio.translations.create({ file: await file(), model: 'whisper-1', response_format: 'text' });
const transcription = await client.audio.transcriptions.create({ file: await file(), model: 'whisper-1', language: 'auto', response_format: 'verbose_json' });
console.log(JSON.stringify({ json, verbose, text, transcription }));
