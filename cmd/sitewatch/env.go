package main

import (
	"io"
	"strings"

	"sitewatch/pipeline"
)

// Env is what a command reads from and writes to: the core's Env (the environment, the logger,
// the clock and the adapters wired in) and the terminal, which only this package draws on —
// tables, summaries, the progress line. Tests fill it in.
type Env struct {
	pipeline.Env
	Stdin      io.Reader // `sitewatch query -` reads SQL from it
	Stdout     io.Writer
	Stderr     io.Writer
	IsTerminal bool // stderr is a terminal: the progress line is drawn instead of log lines
	// TermWidth returns the terminal's width in columns (nil or <= 0: 80).
	TermWidth func() int
}

// withDefaults fills what a test left out: no input, output discarded, the core's defaults.
func (e Env) withDefaults() Env {
	e.Env = e.Env.WithDefaults()
	if e.Stdin == nil {
		e.Stdin = strings.NewReader("")
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	return e
}
