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

static inline ssize_t gw_sys_read(int fd, void *buf, size_t len)
{
#ifdef GW_RAWSYS_LIBC
	return read(fd, buf, len);
#else
	return syscall(SYS_read, fd, buf, len);
#endif
}

static inline ssize_t gw_sys_writev(int fd, const struct iovec *iov, int iovcnt)
{
#ifdef GW_RAWSYS_LIBC
	return writev(fd, iov, iovcnt);
#else
	return syscall(SYS_writev, fd, iov, iovcnt);
#endif
}

static inline ssize_t gw_sys_sendmsg(int fd, const struct msghdr *msg, int flags)
{
#ifdef GW_RAWSYS_LIBC
	return sendmsg(fd, msg, flags);
#else
	return syscall(SYS_sendmsg, fd, msg, flags);
#endif
}

static inline int gw_sys_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
#ifdef GW_RAWSYS_LIBC
	return epoll_wait(epfd, evs, max, timeout_ms);
#else
	return (int)syscall(SYS_epoll_pwait, epfd, evs, max, timeout_ms, NULL, (size_t)0);
#endif
}

#endif
