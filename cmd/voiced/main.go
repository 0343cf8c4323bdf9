// Command voiced is the voiced server: `voiced serve` (the default), `voiced assets verify DIR`
// and `voiced assets fixture DIR`. Flags and VOICED_* environment variables are parsed only here;
// the server is built from its parts (parts.go), one file each, in one explicit sequence.
package main

import (
	"fmt"
	"io"
	"os"
)

// Set by the Makefile with -ldflags -X.
var (
	version            = "dev"
	defaultORTLib      = ""
	defaultSileroModel = ""
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `voiced — a self-hosted realtime voice agent server

usage:
  voiced [serve] [flags]          serve (the default); voiced serve -h lists every flag
  voiced assets verify DIR        check a speech-asset mount by hand: its version and each file's verdict
  voiced assets fixture DIR       write the synthetic fixture mount tests and demos use
  voiced token --jwt-secret-file F --sub S [--org O]
                                  mint an HS256 principal JWT for trying the realtime routes by hand
  voiced --version                print the version

Every flag can also be given as an environment variable VOICED_<FLAG> (--speech-assets is
VOICED_SPEECH_ASSETS); a flag on the command line wins over the variable.
`

// run is main without the exit, so tests can read its output. It returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "--version", "-version", "version":
			fmt.Fprintln(stdout, "voiced", version)
			return 0
		case "help", "-h", "--help":
			fmt.Fprint(stdout, usage)
			return 0
		case "serve":
			return serve(args[1:], stdout, stderr)
		case "assets":
			return assetsCommand(args[1:], stdout, stderr)
		case "token":
			return tokenCommand(args[1:], stdout, stderr)
		}
		if args[0] != "" && args[0][0] != '-' {
			fmt.Fprintf(stderr, "voiced: unknown command %q\n\n%s", args[0], usage)
			return 2
		}
	}
	return serve(args, stdout, stderr)
}
