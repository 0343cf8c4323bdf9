// Package door is the kit every door of voiced opens with, HTTP or WebSocket: refusals by name and
// their JSON (Refusal, WriteError; OpenAI's error body, WriteOpenAIError; SetRetryAfter), the
// reason and series names of refused and open sessions, the capacity gate (a total cap and a cap
// per key), one origin policy (Origins, parsed once from --allow-origin), the registry of hijacked
// sockets that graceful shutdown drains (Sockets) and a socket's drain watcher (WatchDrain), the
// one admit-and-upgrade sequence (Kit.Upgrade, which refuses what is not a handshake), a socket's
// one writer (Writer: bounded queue, write timeout, close frame), the bounded frame reader
// (ReadFrame), forwarding to the node that holds an id (Peers, Forwarded) and the listener's
// deadlines (Limits: header, idle, body pace).
//
// It is a leaf: it imports no other voiced package and no cgo, so the conversation (package
// session) and the speech doors (package speechcore) share it without linking each other.
package door
