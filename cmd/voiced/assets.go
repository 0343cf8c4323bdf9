package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/voiced/voiced/speechcore/assets"
	"github.com/voiced/voiced/speechcore/fixture"
)

// assetsCommand runs `voiced assets verify DIR` and `voiced assets fixture DIR`.
func assetsCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage: voiced assets verify DIR | voiced assets fixture [--silero-model FILE] DIR\n")
		return 2
	}
	switch args[0] {
	case "verify":
		return assetsVerify(args[1:], stdout, stderr)
	case "fixture":
		return assetsFixture(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "voiced assets: unknown command %q (verify or fixture)\n", args[0])
	return 2
}

func assetsVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("voiced assets verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, "usage: voiced assets verify DIR\n")
		return 2
	}
	rep := assets.Verify(fs.Arg(0))
	fmt.Fprintf(stdout, "mount:   %s\n", rep.Dir)
	if rep.Version != "" {
		fmt.Fprintf(stdout, "version: %s\n", rep.Version)
	}
	for _, v := range rep.Verdicts {
		verdict := "OK"
		if v.Err != nil {
			var ae *assets.Error
			if errors.As(v.Err, &ae) {
				verdict = "FAILED (" + ae.Err.Error() + ")"
			} else {
				verdict = "FAILED"
			}
		}
		fmt.Fprintf(stdout, "%s: %s\n", v.Path, verdict)
	}
	if len(rep.Problems) > 0 {
		for _, p := range rep.Problems {
			fmt.Fprintf(stderr, "voiced: %v\n", p)
		}
		fmt.Fprintf(stdout, "REFUSED: %d problem(s)\n", len(rep.Problems))
		return 1
	}
	fmt.Fprintf(stdout, "OK: %d files proved\n", len(rep.Verdicts))
	return 0
}

func assetsFixture(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("voiced assets fixture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	silero := fs.String("silero-model", defaultSileroModel, "the real Silero VAD model copied into the fixture mount")
	withEnvNames(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, "usage: voiced assets fixture [--silero-model FILE] DIR\n")
		return 2
	}
	if _, err := applyEnv(fs, lookupEnv); err != nil {
		fmt.Fprintf(stderr, "voiced: %v\n", err)
		return 2
	}
	if err := writeFixture(fs.Arg(0), *silero); err != nil {
		fmt.Fprintf(stderr, "voiced: write fixture mount %s: %v\n", fs.Arg(0), err)
		return 1
	}
	fmt.Fprintf(stdout, "fixture mount written: %s\n", fs.Arg(0))
	return 0
}

func writeFixture(dir, sileroModel string) error {
	return fixture.Write(dir, fixture.Options{SileroModel: sileroModel})
}
