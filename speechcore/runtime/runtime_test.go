package runtime

import (
	"errors"
	"os"
	"testing"
)

func TestOpenRefusesByName(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want error
	}{
		{"no library path", Config{}, ErrLibraryMissing},
		{"missing library", Config{LibPath: "/nonexistent/libonnxruntime.so"}, ErrLibraryMissing},
		{"unknown device", Config{LibPath: "x", Device: "tpu"}, ErrUnknownDevice},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Open(c.cfg); !errors.Is(err, c.want) {
				t.Fatalf("Open(%+v) = %v, want %v", c.cfg, err, c.want)
			}
		})
	}
}

func TestOpenCPUAndCUDARefusal(t *testing.T) {
	lib := LibPathFromEnv()
	if lib == "" {
		t.Fatal("VOICED_ORT_LIB unset: run the tests through make (make test)")
	}
	if _, err := os.Stat(lib); err != nil {
		t.Fatalf("VOICED_ORT_LIB=%s: %v (run make setup)", lib, err)
	}
	// The CPU build carries no CUDA provider: asking for it must refuse by name, never fall back.
	if _, err := Open(Config{LibPath: lib, Device: DeviceCUDA}); !errors.Is(err, ErrCUDAUnavailable) {
		t.Fatalf("Open(cuda) on the CPU build = %v, want ErrCUDAUnavailable", err)
	}
	env, err := Open(Config{LibPath: lib, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if env.Device() != "cpu" || env.ExecutionProvider() != "cpu" {
		t.Fatalf("device %s provider %s", env.Device(), env.ExecutionProvider())
	}
	if _, err := Open(Config{LibPath: lib}); !errors.Is(err, ErrAlreadyOpen) {
		t.Fatalf("second Open = %v, want ErrAlreadyOpen", err)
	}
	if Shared() != env {
		t.Fatal("Shared() does not return the open environment")
	}
}
