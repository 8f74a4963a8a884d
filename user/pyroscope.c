// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Pyroscope pushes over HTTP with libcurl; see pyroscope.h. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "clock.h"
#include "errors.h"
#include "pyroscope.h"
#include "util.h"

#define CONNECT_TIMEOUT_S	5L
#define PUSH_TIMEOUT_S		10L	/* the event loop waits while we push */

/* A growing text buffer for the request body. */
struct body {
	char *p;
	size_t len, cap;
	uint64_t samples;
};

/* "http://host:4040/" -> "http://host:4040/ingest?name=APP&" */
static char *ingest_prefix(CURL *curl, const char *url, const char *app)
{
	size_t n = strlen(url);
	char *name, *out;

	while (n && url[n - 1] == '/')
		n--;
	name = curl_easy_escape(curl, app, 0);
	if (!name)
		return NULL;
	if (asprintf(&out, "%.*s/ingest?name=%s&", (int)n, url, name) < 0)
		out = NULL;
	curl_free(name);
	return out;
}

int pyroscope_init(struct pyroscope *p, const struct options *o)
{
	memset(p, 0, sizeof(*p));
	p->url = o->pyroscope;
	p->rate = (uint64_t)(o->rate_hz + 0.5);	/* Pyroscope takes whole Hz */
	p->interval = o->push_interval;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) || !(p->curl = curl_easy_init())) {
		tb_error("--pyroscope: cannot start libcurl (check the libcurl installation)");
		return -EIO;
	}
	p->ingest = ingest_prefix(p->curl, o->pyroscope, o->app);
	if (!p->ingest) {
		tb_error("--pyroscope: out of memory (free some memory)");
		return -ENOMEM;
	}
	return 0;
}

void pyroscope_free(struct pyroscope *p)
{
	if (p->curl) {
		curl_easy_cleanup(p->curl);
		curl_global_cleanup();
	}
	free(p->ingest);
	folded_free(&p->acked);
	p->curl = NULL;
	p->ingest = NULL;
}

static int body_add(struct body *b, const char *stack, uint64_t count)
{
	size_t need = strlen(stack) + 24;

	if (array_grow(&b->p, &b->cap, b->len + need, 1, 4096))
		return -ENOMEM;
	b->len += (size_t)sprintf(b->p + b->len, "%s %" PRIu64 "\n", stack, count);
	b->samples += count;
	return 0;
}

/* What cur has beyond acked; both are sorted by stack (folded_merge). */
static int delta(const struct folded *cur, const struct folded *acked, struct body *b)
{
	size_t i, j = 0;

	for (i = 0; i < cur->n; i++) {
		uint64_t had = 0;
		int c = 1;

		while (j < acked->n && (c = strcmp(acked->v[j].stack, cur->v[i].stack)) < 0)
			j++;
		if (j < acked->n && !c)
			had = acked->v[j].count;
		/* Counts only grow; a smaller one would be a bug, not news. */
		if (cur->v[i].count > had && body_add(b, cur->v[i].stack, cur->v[i].count - had))
			return -ENOMEM;
	}
	return 0;
}

/* The profile so far, folded the way the collapsed output folds it. */
static int fold_now(struct session *s, struct folded *out)
{
	struct resolved r = { 0 };
	int ret;

	memset(out, 0, sizeof(*out));
	ret = session_resolve(s, &r);
	if (!ret)
		ret = resolved_fold(&r, out);
	resolved_free(&r);
	if (ret)
		folded_free(out);
	return ret;
}

/* One POST. 0 if the server took it; else why in err. */
static int post(struct pyroscope *p, const struct body *b, int64_t from, int64_t until,
		char *err, size_t errlen)
{
	char url[8192], cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: text/plain"), *more;
	CURL *c = p->curl;
	long code = 0;
	CURLcode res;

	snprintf(url, sizeof(url), "%sfrom=%" PRId64 "&until=%" PRId64 "&sampleRate=%" PRIu64
		 "&spyName=tachyon-bpf&format=folded", p->ingest, from, until, p->rate);
	/* No "Expect: 100-continue" round trip (a second of waiting on some servers). */
	more = curl_slist_append(hdr, "Expect:");
	if (more)
		hdr = more;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, b->p ? b->p : "");
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "tachyon-bpf");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, PUSH_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	res = curl_easy_perform(c);
	curl_slist_free_all(hdr);
	if (res != CURLE_OK) {
		snprintf(err, errlen, "%s", cerr[0] ? cerr : curl_easy_strerror(res));
		return -EIO;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code > 299) {
		snprintf(err, errlen, "the server answered HTTP %ld", code);
		return -EPROTO;
	}
	return 0;
}

int pyroscope_push(struct pyroscope *p, struct session *s, int final)
{
	struct body b = { 0 };
	struct folded cur;
	double now = wall_now();
	int64_t until = (int64_t)now + (now > (double)(int64_t)now);
	char err[CURL_ERROR_SIZE + 64];

	if (!p->from) {
		struct session_view v;

		session_snapshot(s, &v);
		p->from = (int64_t)v.st.start_unix;
	}
	if (until <= p->from)
		until = p->from + 1;
	if (fold_now(s, &cur) || delta(&cur, &p->acked, &b)) {
		tb_warn("pyroscope: out of memory preparing a push (retried with the next one)");
		folded_free(&cur);
		free(b.p);
		return -ENOMEM;
	}
	if (!b.samples || !post(p, &b, p->from, until, err, sizeof(err))) {
		/* Delivered (or nothing to say): the server has all of cur. */
		folded_free(&p->acked);
		p->acked = cur;
		p->from = until;
		p->pushes += !!b.samples;
		p->samples += b.samples;
		free(b.p);
		if (final)
			tb_debug("pyroscope: %" PRIu64 " samples delivered in %" PRIu64
				 " pushes, %" PRIu64 " failed pushes", p->samples, p->pushes,
				 p->failures);
		return 0;
	}
	p->failures++;
	tb_warn("pyroscope: push of %" PRIu64 " samples to %s failed: %s (%s)", b.samples,
		p->url, err, final ? "the run is over: they are lost" :
		"kept: they go with the next push");
	folded_free(&cur);
	free(b.p);
	return -EIO;
}

int pyroscope_due(struct pyroscope *p)
{
	double now = mono_now();

	if (!p->next)
		p->next = now + p->interval;
	if (now < p->next)
		return 0;
	p->next = now + p->interval;
	return 1;
}
