// Package logger: build shim for Go 1.19 (no log/slog). Same API as upstream's internal/logger,
// printing "level=... msg=... key=value" lines with the standard library; the collectors are unchanged.
package logger

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

var levels = map[string]int{"debug": 0, "info": 1, "warn": 2, "error": 3}

type Logger struct {
	min  int
	with []interface{}
}

func NewLogger(level string) *Logger     { return NewTextLogger(level) }
func NewTextLogger(level string) *Logger { return &Logger{min: levels[level]} }
func NewJSONLogger(level string) *Logger { return &Logger{min: levels[level]} }

func (l *Logger) emit(level string, msg string, args []interface{}) {
	if levels[level] < l.min {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "time=%s level=%s msg=%q", time.Now().Format(time.RFC3339), level, msg)
	all := append(append([]interface{}{}, l.with...), args...)
	for i := 0; i+1 < len(all); i += 2 {
		fmt.Fprintf(&b, " %v=%q", all[i], fmt.Sprint(all[i+1]))
	}
	fmt.Fprintln(os.Stdout, b.String())
}

// Log provides the go-kit/log interface (exporter-toolkit).
func (l *Logger) Log(keyvals ...interface{}) error { l.emit("info", "", keyvals); return nil }

func (l *Logger) With(keyvals ...interface{}) *Logger {
	return &Logger{min: l.min, with: append(append([]interface{}{}, l.with...), keyvals...)}
}
func (l *Logger) Debug(msg string, args ...interface{})         { l.emit("debug", msg, args) }
func (l *Logger) Info(msg string, args ...interface{})          { l.emit("info", msg, args) }
func (l *Logger) Warn(msg string, args ...interface{})          { l.emit("warn", msg, args) }
func (l *Logger) Error(msg string, args ...interface{})         { l.emit("error", msg, args) }
func (l *Logger) WithContext(ctx context.Context) *Logger        { return l }
func (l *Logger) WithTimeout(timeout time.Duration) *Logger      { return l.With("timeout", timeout) }
func (l *Logger) WithCommand(command string, args []string) *Logger {
	return l.With("command", command, "args", args)
}
