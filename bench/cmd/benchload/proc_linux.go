package main

import "syscall"

// procAttr puts a child in a process group of its own (which stop signals
// as a whole) and has the kernel send it SIGKILL when benchload dies
// without stopping it. (Pdeathsig fires when the thread that started the
// child ends; Go ends a thread before its process only under LockOSThread,
// which benchload does not use.)
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to every process of the group pgid.
func signalGroup(pgid int, sig syscall.Signal) error { return syscall.Kill(-pgid, sig) }
