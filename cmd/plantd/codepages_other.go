//go:build !linux

package main

// releaseCodePages does nothing outside Linux (codepages_linux.go).
func releaseCodePages() (int64, error) { return 0, nil }
