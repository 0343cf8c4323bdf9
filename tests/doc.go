// Package tests holds voiced's end-to-end tests: they run the built binary ($VOICED_BIN, which
// `make test` builds first) on the fixture mount and talk to it the way a new user's clients
// would — raw sockets, the OpenAI HTTP shapes, go-openai-realtime and the official openai npm
// package (tests/node). There is no non-test code here.
//
// Run: `make test`, or by hand `make build && eval "$(make -s env)" && eval "$(scripts/test-services.sh)"
// && go test -race ./tests`. Without VOICED_BIN the package fails at once, saying so.
//
// The harness (harness_test.go): TestMain writes one fixture mount (`voiced assets fixture`),
// reads the flags `voiced serve -h` lists and makes a test CA (ca.pem, for NODE_EXTRA_CA_CERTS).
// startServer runs `voiced serve --bind 127.0.0.1:0 --log-format json` with a token file, a
// --data-dir under t.TempDir(), the mount, optional TLS and an HS256 --jwt-secret-file, reads the
// bound address from the "listening" log record and waits for /health; stop sends SIGTERM and
// requires exit 0, kill9 is the crash. checkLeaks fails a test whose goroutines or child
// processes outlive it; TestMain fails the run if any child process is left.
//
// What skips, and when: only what the machine lacks. Node tests skip without node or
// tests/node/node_modules (`make test` runs npm ci there); the Redis and Postgres tests skip
// without redis-server, VOICED_TEST_REDIS_URL or VOICED_TEST_POSTGRES_DSN; the real-speech
// sources skip without VOICED_SILERO_TESTFILES, espeak-ng or pocketsphinx-testdata; the soak
// skips under -short, and the fair-queue test skips when the machine decoded the greedy backlog
// faster than it was sent. A flag `voiced serve -h` does not list (needFlag) or a route
// answering 404 fails the test, naming it: every component is built, so either is a regression.
//
// The content checks are exact: the fixture codec (docs/fixture-codec.md) reads back the
// phonemes the kokoro package's own G2P gives for the text, so a fault anywhere between text and
// transcript changes the string. Real speech only drives turns; what the fixture Whisper makes of
// it is deterministic nonsense, and the talk test checks the reply audio by its content.
package tests
