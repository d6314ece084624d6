// Package main is the entry point for the Prometheus Slurm Exporter.
// It registers all collectors, configures flags, and starts the HTTP
// server exposing metrics at /metrics (default port :9341).
package main
