package whisper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/fixture"
	"github.com/voiced/voiced/speechcore/runtime"
)

// The package's tests share one ONNX Runtime environment (one per process) and one fixture mount.
var (
	testEnv   *runtime.Env
	testMount string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	lib := runtime.LibPathFromEnv()
	if lib == "" {
		fmt.Fprintln(os.Stderr, "VOICED_ORT_LIB unset: run the tests through make (make test) or eval \"$(make -s env)\"")
		return 1
	}
	env, err := runtime.Open(runtime.Config{LibPath: lib, IntraOpThreads: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Close()
	testEnv = env
	dir, err := os.MkdirTemp("", "whisper-fixture-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := fixture.Write(dir, fixture.Options{SileroModel: os.Getenv("VOICED_SILERO_MODEL")}); err != nil {
		fmt.Fprintln(os.Stderr, "write fixture mount:", err)
		return 1
	}
	testMount = dir
	return m.Run()
}

func whisperDir() string { return filepath.Join(testMount, filepath.FromSlash(assets.WhisperDir)) }

func loadEngine(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := Load(context.Background(), testEnv, whisperDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
