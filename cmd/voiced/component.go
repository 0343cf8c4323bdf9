package main

import (
	"context"
	"flag"
	"sort"
)

// A component is one part of the server, in its own file, registered from init:
//
//	func init() {
//		register("meter", orderStores, func() *component {
//			var dsn string
//			return &component{
//				flags:    func(fs *flag.FlagSet) { fs.StringVar(&dsn, "meter-dsn", "", "…") },
//				validate: func(app *App) error { … },      // nothing has started yet
//				start:    func(ctx context.Context, app *App) error { … }, // before the listener binds
//				stop:     func(ctx context.Context) error { … },           // after sockets drained
//			}
//		})
//	}
//
// Each run builds fresh components from the factories. Any hook may be nil.
type component struct {
	flags    func(fs *flag.FlagSet)
	validate func(app *App) error
	start    func(ctx context.Context, app *App) error
	stop     func(ctx context.Context) error
}

// Start order: lower first; stops run in the reverse order of successful starts.
const (
	orderCore   = 0  // auth and the server's own routes (/health, /)
	orderStores = 10 // durable stores: meter, tickets
	orderSpeech = 20 // the speech service: mount, runtime, engines, warm-up
	orderDoors  = 30 // what serves on top of speech: the conversation, usage, metrics
)

type registration struct {
	name  string
	order int
	make  func() *component
}

var registry []registration

// register adds a component factory; call it from init.
func register(name string, order int, make func() *component) {
	for _, r := range registry {
		if r.name == name {
			panic("voiced: component registered twice: " + name)
		}
	}
	registry = append(registry, registration{name, order, make})
}

type namedComponent struct {
	name string
	*component
}

// components builds one instance of every registered component, in start order.
func components() []namedComponent {
	regs := append([]registration(nil), registry...)
	sort.SliceStable(regs, func(i, j int) bool {
		if regs[i].order != regs[j].order {
			return regs[i].order < regs[j].order
		}
		return regs[i].name < regs[j].name
	})
	out := make([]namedComponent, len(regs))
	for i, r := range regs {
		out[i] = namedComponent{r.name, r.make()}
	}
	return out
}
