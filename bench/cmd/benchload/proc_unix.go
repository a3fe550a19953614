//go:build unix && !linux

package main

import "syscall"

// procAttr puts a child in a process group of its own, which stop signals
// as a whole. (No Pdeathsig outside Linux: a benchload killed with kill -9
// leaves its servers running there.)
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to every process of the group pgid.
func signalGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }
