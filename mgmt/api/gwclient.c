/* SPDX-License-Identifier: Apache-2.0 */
/*
 * isergwd's control socket, as isergw-api uses it (docs/control.md), with the
 * client side of common/ipc.h and proto/ctl_wire.h: a connection per scrape
 * or readiness probe, every request sent at once
 * (isergwd answers them in order), every wait bounded by one deadline, so
 * that an HTTP handler never waits longer than --isergwd-timeout-ms.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "common/ipc.h"

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(int64_t deadline)
{
	int64_t l = deadline - mono_ms();

	return l > 0 ? (int)l : 0;
}

static void init_req(CtlRequest *r)
{
	isergw__ctl__request__init(r);
}

int api_gw_fetch(const char *socket_path, int timeout_ms, unsigned int what, char *const *dgs,
		 size_t ndgs, struct api_gw_snapshot *s, char *err, size_t errlen)
{
	bool full = what & API_GW_FULL;
	int64_t deadline = mono_ms() + timeout_ms;
	Isergw__Ctl__GetStatus gs = ISERGW__CTL__GET_STATUS__INIT;
	Isergw__Ctl__ListSessions ls = ISERGW__CTL__LIST_SESSIONS__INIT;
	Isergw__Ctl__GetCounters gc = ISERGW__CTL__GET_COUNTERS__INIT;
	Isergw__Ctl__GetAluaStates ga[API_DG_MAX + 1];
	CtlRequest req[3 + API_DG_MAX + 1];
	CtlReply *rep[3 + API_DG_MAX + 1] = { NULL };
	size_t nreq = 0, nrep = 0, nga = 0;
	int fd, rc;

	memset(s, 0, sizeof(*s));
	if (ndgs > API_DG_MAX)
		ndgs = API_DG_MAX;
	init_req(&req[nreq]);
	req[nreq].op_case = ISERGW__CTL__REQUEST__OP_GET_STATUS;
	req[nreq++].get_status = &gs;
	if (full) {
		init_req(&req[nreq]);
		req[nreq].op_case = ISERGW__CTL__REQUEST__OP_LIST_SESSIONS;
		req[nreq++].list_sessions = &ls;
		init_req(&req[nreq]);
		gc.lun_latency = what & API_GW_LUN_LATENCY;
		req[nreq].op_case = ISERGW__CTL__REQUEST__OP_GET_COUNTERS;
		req[nreq++].get_counters = &gc;
		for (size_t i = 0; i <= ndgs; i++) {
			isergw__ctl__get_alua_states__init(&ga[nga]);
			ga[nga].device_group = i == 0 ? ctl_str("") : dgs[i - 1];
			init_req(&req[nreq]);
			req[nreq].op_case = ISERGW__CTL__REQUEST__OP_GET_ALUA_STATES;
			req[nreq++].get_alua_states = &ga[nga++];
		}
	}

	fd = gw_ipc_connect(socket_path, left_ms(deadline));
	if (fd < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", socket_path, strerror(-fd));
		return fd;
	}
	/* a few hundred bytes: the socket buffer takes them at once */
	for (size_t i = 0; i < nreq; i++) {
		rc = ctl_send_request(fd, &req[i]);
		if (rc) {
			snprintf(err, errlen, "cannot send to %s: %s", socket_path, strerror(-rc));
			goto err_close;
		}
	}
	for (; nrep < nreq; nrep++) {
		int left = left_ms(deadline);

		rc = left ? ctl_recv_reply(fd, &rep[nrep], left) : -ETIMEDOUT;
		if (rc == 0 && ctl_reply_is_event(rep[nrep])) {
			ctl_reply_free(rep[nrep]);
			rep[nrep] = NULL;
			rc = -EBADMSG;
		}
		if (rc) {
			snprintf(err, errlen, "%s %s: %s", rc == -ETIMEDOUT ? "no answer within the "
				 "timeout from" : "no answer from", socket_path, strerror(-rc));
			goto err_close;
		}
	}
	close(fd);
	fd = -1;

	/* the status, sessions and counters must be there; device groups may not exist */
	for (size_t i = 0; i < nreq && i < 3; i++) {
		if (rep[i]->status) {
			rc = rep[i]->status;
			snprintf(err, errlen, "isergwd refused %s: %s", ctl_op_name(&req[i]),
				 rep[i]->error && rep[i]->error[0] ? rep[i]->error : strerror(-rc));
			goto err_free;
		}
	}
	if ((rep[0]->payload_case != ISERGW__CTL__REPLY__PAYLOAD_STATUS_INFO) ||
	    (full && (rep[1]->payload_case != ISERGW__CTL__REPLY__PAYLOAD_SESSIONS ||
		      rep[2]->payload_case != ISERGW__CTL__REPLY__PAYLOAD_COUNTERS))) {
		rc = -EBADMSG;
		snprintf(err, errlen, "isergwd answered with an unexpected payload");
		goto err_free;
	}
	s->status = rep[0];
	rep[0] = NULL;
	if (full) {
		s->sessions = rep[1];
		s->counters = rep[2];
		rep[1] = rep[2] = NULL;
		for (size_t i = 3; i < nreq; i++) {
			if (rep[i]->status == 0 &&
			    rep[i]->payload_case == ISERGW__CTL__REPLY__PAYLOAD_ALUA) {
				s->alua[s->nalua++] = rep[i];
				rep[i] = NULL;
			}
		}
	}
	rc = 0;
err_free:
	for (size_t i = 0; i < nreq; i++)
		ctl_reply_free(rep[i]);
	if (rc)
		api_gw_snapshot_free(s);
	return rc;
err_close:
	close(fd);
	goto err_free;
}

void api_gw_snapshot_free(struct api_gw_snapshot *s)
{
	ctl_reply_free(s->status);          /* NULL: nothing */
	ctl_reply_free(s->sessions);
	ctl_reply_free(s->counters);
	for (size_t i = 0; i < s->nalua; i++)
		ctl_reply_free(s->alua[i]);
	memset(s, 0, sizeof(*s));
}

int api_gw_call(const char *socket_path, int timeout_ms, const CtlRequest *req, CtlReply **rep,
		char *err, size_t errlen)
{
	int64_t deadline = mono_ms() + timeout_ms;
	int fd, rc, left;

	*rep = NULL;
	fd = gw_ipc_connect(socket_path, left_ms(deadline));
	if (fd < 0) {
		snprintf(err, errlen, "cannot connect to %s: %s", socket_path, strerror(-fd));
		return fd;
	}
	rc = ctl_send_request(fd, req);
	if (rc) {
		snprintf(err, errlen, "cannot send to %s: %s", socket_path, strerror(-rc));
		goto out;
	}
	left = left_ms(deadline);
	rc = left ? ctl_recv_reply(fd, rep, left) : -ETIMEDOUT;
	if (rc == 0 && ctl_reply_is_event(*rep)) {
		ctl_reply_free(*rep);
		*rep = NULL;
		rc = -EBADMSG;
	}
	if (rc)
		snprintf(err, errlen, "%s %s: %s", rc == -ETIMEDOUT ? "no answer within the timeout "
			 "from" : "no answer from", socket_path, strerror(-rc));
out:
	close(fd);
	return rc;
}
