package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// envName is the variable that stands for a flag: --speech-assets is VOICED_SPEECH_ASSETS.
func envName(flagName string) string {
	return "VOICED_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its VOICED_* variable, if set. The
// flag wins. It returns which flags came from which variable.
func applyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) (map[string]string, error) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	fromEnv := map[string]string{}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		name := envName(f.Name)
		v, ok := lookup(name)
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("environment variable %s=%q: %v", name, v, e)
			return
		}
		fromEnv[f.Name] = name
	})
	return fromEnv, err
}

// withEnvNames appends each flag's variable to its usage text, for -h.
func withEnvNames(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		f.Usage += " [" + envName(f.Name) + "]"
	})
}

var lookupEnv = os.LookupEnv
