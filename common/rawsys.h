/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The system calls of the data path without libc's cancellation point.
 * glibc's read, writev, sendmsg and epoll_wait switch asynchronous cancellation on
 * and off around the call; no isergw thread is ever cancelled, and on a
 * served 4 KiB READ that bookkeeping was about 175 instructions of the
 * command's 2,900 (tests/bench/served_cpu.sh). Same results and errno as the
 * libc calls. Under ThreadSanitizer they stay the libc calls, whose
 * interceptors give TSan the happens-before of file descriptors and epoll.
 */
#ifndef ISERGW_COMMON_RAWSYS_H
#define ISERGW_COMMON_RAWSYS_H

#include <signal.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define GW_RAWSYS_LIBC 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GW_RAWSYS_LIBC 1
#endif
#endif

/* libc's call under TSan, else the system call of the same number */
#ifdef GW_RAWSYS_LIBC
#define GW_RAWSYS(libc, nr, ...) libc(__VA_ARGS__)
#else
#define GW_RAWSYS(libc, nr, ...) syscall(nr, __VA_ARGS__)
#endif

static inline ssize_t gw_sys_read(int fd, void *buf, size_t len)
{
	return GW_RAWSYS(read, SYS_read, fd, buf, len);
}

static inline ssize_t gw_sys_writev(int fd, const struct iovec *iov, int iovcnt)
{
	return GW_RAWSYS(writev, SYS_writev, fd, iov, iovcnt);
}

static inline ssize_t gw_sys_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	return GW_RAWSYS(sendmsg, SYS_sendmsg, fd, msg, flags);
}

/* epoll_pwait with no signal mask: the kernel has no epoll_wait on every architecture */
static inline int gw_sys_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
#ifdef GW_RAWSYS_LIBC
	return epoll_wait(epfd, evs, max, timeout_ms);
#else
	return (int)syscall(SYS_epoll_pwait, epfd, evs, max, timeout_ms, NULL, (size_t)0);
#endif
}

#endif
