//go:build !unix

package main

// execQuietSysmon does nothing where a process cannot re-execute itself in
// place.
func execQuietSysmon() {}
