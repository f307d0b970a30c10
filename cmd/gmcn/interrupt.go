package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interrupts handles SIGINT and SIGTERM during `gmcn train`. Before the
// training has started (checking, loading and fitting the data, building
// the model) there is nothing to resume: the first signal gives the run
// directory back as it was and exits 130 at once. Once it has started, the
// first signal cancels the training's context, so that the run stops within
// its current step with a checkpoint of the last finished one, and a second
// signal exits 130 at once, leaving the last checkpoint written.
type interrupts struct {
	mu      sync.Mutex
	started bool
	signals chan os.Signal
	cancel  context.CancelFunc
}

// handleInterrupts starts handling the signals; release, if not nil, gives
// the run directory back. The returned context is the training's.
func handleInterrupts(ctx context.Context, release func()) (context.Context, *interrupts) {
	ctx, cancel := context.WithCancel(ctx)
	in := &interrupts{signals: make(chan os.Signal, 2), cancel: cancel}
	signal.Notify(in.signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		for n := 0; ; n++ {
			sig, ok := <-in.signals
			if !ok {
				return
			}
			in.mu.Lock()
			started := in.started
			in.mu.Unlock()
			switch {
			case !started:
				fmt.Fprintf(os.Stderr, "gmcn train: %v before training started: stopped, nothing to resume; the run directory is as it was\n", sig)
				if release != nil {
					release()
				}
				os.Exit(130)
			case n == 0:
				fmt.Fprintf(os.Stderr, "gmcn train: %v: stopping now with a checkpoint of the last finished step (a second signal quits without one)\n", sig)
				cancel()
			default:
				fmt.Fprintln(os.Stderr, "gmcn train: quitting without a checkpoint; --resume continues from the last one written")
				os.Exit(130)
			}
		}
	}()
	return ctx, in
}

// start marks the training started: from now on a signal stops it with a
// checkpoint instead of ending the process.
func (in *interrupts) start() {
	in.mu.Lock()
	in.started = true
	in.mu.Unlock()
}

// close stops the handling and cancels the context.
func (in *interrupts) close() {
	signal.Stop(in.signals)
	close(in.signals)
	in.cancel()
}
