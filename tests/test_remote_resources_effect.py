"""TensorStore's S3/GCS resources that change the requests take effect: S3's `host_header`,
`gcs_user_project`, and the experimental rate limiters; and the one table of each kvstore
driver's resources agrees with what TensorStore writes.

The remote tests run against moto's S3 server on loopback behind a recording forwarder: what
the forwarder receives (Host header, signature, x-goog-user-project) is what a server sees.
GCS requests go to moto too (it answers the XML API object_store speaks). TensorStore is the
oracle for the JSON it accepts and writes, and for host_header on the wire.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import math
import pickle
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import numpy as np
import pytest

pytest.importorskip("obstore")
pytest.importorskip("moto")
ts = pytest.importorskip("tensorstore")

from _loopback import REGION, S3_KEY, S3_SECRET, make_bucket  # noqa: E402

import zarrkit  # noqa: E402
from zarrkit.errors import SpecError  # noqa: E402
from zarrkit.kvstore import open_kvstore  # noqa: E402
from zarrkit.kvstore._io_resources import DRIVER_RESOURCES, driver_resources  # noqa: E402
from zarrkit.kvstore._rate_limit import RateLimits, TokenBucket  # noqa: E402

MD = {"shape": [8], "data_type": "int16", "chunk_grid": {"name": "regular",
      "configuration": {"chunk_shape": [2]}}}
_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "content-length"}


# -- the recording forwarder ------------------------------------------------------------------
class _Forwarder(BaseHTTPRequestHandler):
    """Records each request (method, target as sent, headers in lower case) and forwards it
    to moto, whose answer goes back as it came."""

    protocol_version = "HTTP/1.1"
    server: _Recorder

    def log_message(self, format, *args):  # noqa: A002 - stdlib signature
        return None

    def _forward(self):
        size = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(size) if size else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.server.lock:
            self.server.seen.append((self.command, self.path, headers))
        target = urlsplit(self.path)  # the absolute form too (a request sent as to a proxy)
        path = target.path + (f"?{target.query}" if target.query else "")
        conn = http.client.HTTPConnection(self.server.upstream, timeout=30)
        try:
            conn.request(self.command, path, body, {k: v for k, v in headers.items()
                                                    if k not in _HOP})
            answer = conn.getresponse()
            data = answer.read()
        finally:
            conn.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in _HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _forward


class _Recorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _Forwarder)
        self.upstream = urlsplit(upstream).netloc
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def take(self) -> list[tuple[str, str, dict[str, str]]]:
        with self.lock:
            seen, self.seen = self.seen, []
        return seen


@pytest.fixture(scope="module")
def recorder(s3_endpoint):
    server = _Recorder(s3_endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def fresh(recorder, s3_endpoint):
    """A new bucket (no dash: object_store escapes it in GCS paths, and moto does not
    unescape it), and the recorder emptied."""
    name = f"b{uuid.uuid4().hex[:12]}"
    make_bucket(s3_endpoint, name)
    recorder.take()
    return name


def _s3(bucket, recorder, **members):
    return {"driver": "s3", "bucket": bucket, "endpoint": recorder.url, "aws_region": REGION,
            "storage_options": {"key": S3_KEY, "secret": S3_SECRET}, **members}


def _gcs(bucket, recorder, **members):
    # A bearer token (moto takes any): object_store asks a token server for writes otherwise.
    return {"driver": "gcs", "bucket": bucket,
            "storage_options": {"bearer_token": "t", "endpoint_url": recorder.url}, **members}


def _signed_for_host(method, target, headers, secret=S3_SECRET):
    """Whether the request's SigV4 signature is right for the Host header it carries."""
    auth = headers["authorization"]
    fields = dict(part.strip().split("=", 1) for part in auth.split(" ", 1)[1].split(","))
    scope = fields["Credential"].split("/", 1)[1]
    signed = fields["SignedHeaders"].split(";")
    parts = urlsplit(target)
    query = "&".join(sorted(q if "=" in q else q + "=" for q in parts.query.split("&") if q))
    canonical = "\n".join([method, parts.path, query,
                           *(f"{h}:{' '.join(headers[h].split())}" for h in signed), "",
                           ";".join(signed), headers["x-amz-content-sha256"]])
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = "\n".join(["AWS4-HMAC-SHA256", headers["x-amz-date"], scope, digest])
    key = ("AWS4" + secret).encode()
    for piece in scope.split("/"):
        key = hmac.new(key, piece.encode(), hashlib.sha256).digest()
    good = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return "host" in signed and hmac.compare_digest(good, fields["Signature"])


def _write_read(kvstore, value=7):
    a = zarrkit.open({"driver": "zarr3", "kvstore": kvstore, "metadata": MD, "create": True,
                      "delete_existing": True})
    a[...] = np.arange(8) * value
    b = zarrkit.open({"driver": "zarr3", "kvstore": kvstore})
    assert b[...].tolist() == (np.arange(8) * value).tolist()
    return a


# -- S3 host_header ---------------------------------------------------------------------------
def test_s3_requests_carry_and_are_signed_for_the_host_header(fresh, recorder):
    """host_header was accepted and ignored: requests went out with the endpoint's host."""
    a = _write_read(_s3(fresh, recorder, host_header="localhost:4566", path="x/"))
    seen = recorder.take()
    assert len(seen) >= 6 and {h["host"] for _, _, h in seen} == {"localhost:4566"}
    assert all(_signed_for_host(m, t, h) for m, t, h in seen)
    assert a.spec().to_json()["kvstore"]["host_header"] == "localhost:4566"


def test_s3_requests_without_host_header_name_the_endpoint(fresh, recorder):
    _write_read(_s3(fresh, recorder))
    seen = recorder.take()
    assert {h["host"] for _, _, h in seen} == {urlsplit(recorder.url).netloc}
    assert all(_signed_for_host(m, t, h) for m, t, h in seen)
    assert "host_header" not in open_kvstore(_s3(fresh, recorder))[0].to_json()


def test_tensorstore_sends_the_same_host_header(fresh, recorder, monkeypatch):
    """Both libraries, given one spec, send the same Host; each reads what the other wrote."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", S3_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", S3_SECRET)
    kv = {"driver": "s3", "bucket": fresh, "endpoint": recorder.url, "aws_region": REGION,
          "host_header": "localhost:4566", "aws_credentials": {"type": "environment"}}
    theirs = ts.open({"driver": "zarr3", "kvstore": {**kv, "path": "t/"}, "metadata": MD},
                     create=True).result()
    theirs[...] = np.arange(8, dtype="int16")
    ts_hosts = {h["host"] for _, _, h in recorder.take()}
    ours = zarrkit.open({"driver": "zarr3", "kvstore": {**kv, "path": "t/"}})
    assert ours[...].tolist() == list(range(8))
    ours[...] = 5
    assert theirs.read().result().tolist() == [5] * 8
    our_hosts = {h["host"] for _, _, h in recorder.take()}
    assert ts_hosts == our_hosts == {"localhost:4566"}
    assert ts.KvStore.open(kv).result().spec().to_json()["host_header"] == \
        open_kvstore(kv)[0].to_json()["host_header"]


@pytest.mark.parametrize("members,match", [
    ({"endpoint": None}, "cannot be set without 'endpoint'"),
    ({"endpoint": "https://127.0.0.1:9"}, "needs an http:// endpoint"),
    ({"host_header": "a b"}, "expected a host name"),
    ({"host_header": "h/path"}, "expected a host name"),
    ({"host_header": "user@h"}, "expected a host name"),
    ({"host_header": "h:port"}, "expected a host name"),
])
def test_host_header_refusals(members, match):
    spec = {"driver": "s3", "bucket": "bkt", "endpoint": "http://127.0.0.1:9",
            "host_header": "h.example", "aws_credentials": {"type": "anonymous"}, **members}
    spec = {k: v for k, v in spec.items() if v is not None}
    with pytest.raises(SpecError, match=match):
        open_kvstore(spec)


def test_host_header_without_endpoint_refused_by_tensorstore_too():
    spec = {"driver": "s3", "bucket": "bkt", "host_header": "h.example", "aws_region": REGION}
    with pytest.raises(ValueError, match="endpoint"):
        ts.KvStore.open(spec).result()


# -- gcs_user_project -------------------------------------------------------------------------
def test_gcs_requests_name_the_user_project(fresh, recorder):
    """gcs_user_project was accepted and ignored: requester-pays buckets refused the reads."""
    _write_read(_gcs(fresh, recorder, gcs_user_project={"project_id": "billing-1"}, path="g/"))
    seen = recorder.take()
    assert len(seen) >= 6
    assert {h.get("x-goog-user-project") for _, _, h in seen} == {"billing-1"}


def test_gcs_user_project_from_the_context(fresh, recorder):
    """As in TensorStore, a kvstore without the member uses its context's resource."""
    kv = _gcs(fresh, recorder, path="g/")
    a = zarrkit.open({"driver": "zarr3", "kvstore": kv, "metadata": MD, "create": True,
                      "context": {"gcs_user_project": {"project_id": "ctx-proj"}}})
    a[...] = 3
    assert {h.get("x-goog-user-project") for _, _, h in recorder.take()} == {"ctx-proj"}
    retained = a.spec(retain_context=True).to_json()["kvstore"]
    assert retained["gcs_user_project"] == {"project_id": "ctx-proj"}
    by_name = {**kv, "gcs_user_project": "gcs_user_project#b",
               "context": {"gcs_user_project#b": {"project_id": "named"}}}
    assert zarrkit.open({"driver": "zarr3", "kvstore": by_name})[...].tolist() == [3] * 8
    assert {h.get("x-goog-user-project") for _, _, h in recorder.take()} == {"named"}


def test_gcs_requests_without_user_project_name_none(fresh, recorder):
    _write_read(_gcs(fresh, recorder))
    assert {h.get("x-goog-user-project") for _, _, h in recorder.take()} == {None}


@pytest.mark.parametrize("value", [{"project_id": 5}, {"project": "p"}, "not a reference", 3])
def test_gcs_user_project_refusals_match_tensorstore(value):
    spec = {"driver": "gcs", "bucket": "bkt", "gcs_user_project": value}
    with pytest.raises(ValueError):
        ts.KvStore.Spec(spec)
    with pytest.raises(SpecError):
        open_kvstore(spec, storage_options={"token": "anon"})


# -- rate limiters: the buckets ---------------------------------------------------------------
class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_n_requests_at_rate_r_are_scheduled_n_over_r_seconds_out():
    clock = _Clock()
    bucket = TokenBucket(4.0, clock=clock)
    delays = [bucket.reserve() for _ in range(8)]
    assert delays == pytest.approx([(k + 1) / 4 for k in range(8)])
    assert bucket.scheduled == pytest.approx(100.0 + 8 / 4)


def test_requests_spread_out_in_time_wait_only_for_their_own_token():
    clock = _Clock()
    bucket = TokenBucket(2.0, clock=clock)
    clock.now += 0.5
    assert bucket.reserve() == 0  # one token accrued
    clock.now += 0.1
    assert bucket.reserve() == pytest.approx(0.4)  # the next at 1.0 s
    assert bucket.reserve() == pytest.approx(0.9)  # then at 1.5 s
    clock.now += 10
    assert [bucket.reserve() for _ in range(18)] == [0] * 18  # 20 more, 1.8 of them owed
    assert bucket.reserve() == pytest.approx(0.4)


def test_an_idle_bucket_holds_at_most_1000_seconds_or_2000_tokens():
    for rate, cap in ((1.0, 1000), (5.0, 2000)):
        clock = _Clock()
        bucket = TokenBucket(rate, clock=clock)
        clock.now += 10_000
        assert all(bucket.reserve() == 0 for _ in range(cap))
        assert bucket.reserve() == pytest.approx(1 / rate)


def test_the_rate_doubles_every_doubling_time():
    clock = _Clock()
    bucket = TokenBucket(2.0, doubling_time=1.0, clock=clock)
    # Tokens by time t: the integral of 2 * 2**t, 2 / ln 2 * (2**t - 1).
    for k in range(1, 30):
        expected = math.log2(1 + k * math.log(2) / 2)
        assert bucket.reserve() == pytest.approx(expected)
    clock.now += 60  # after 60 doublings the rate is beyond any number of requests
    assert all(bucket.reserve() == 0 for _ in range(2000))


@pytest.mark.parametrize("doubling", ["0", "-1s", "inf"])
def test_no_positive_finite_doubling_time_keeps_the_rate(doubling):
    """TensorStore keeps a constant rate for 0 and negative times (and aborts for inf)."""
    limits = RateLimits({"read_rate": 4.0, "doubling_time": doubling}, "t", clock=_Clock())
    assert [limits.delay("read") for _ in range(4)] == pytest.approx([0.25, 0.5, 0.75, 1])


def test_reads_and_writes_are_limited_separately():
    limits = RateLimits({"read_rate": 1.0}, "t", clock=_Clock())
    assert limits.write is None and [limits.delay("write") for _ in range(50)] == [0] * 50
    assert [limits.delay("read") for _ in range(3)] == [1, 2, 3]
    limits = RateLimits({"read_rate": 1.0, "write_rate": 10.0}, "t", clock=_Clock())
    assert limits.delay("write") == pytest.approx(0.1) and limits.delay("read") == 1


# -- rate limiters: their JSON ----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["experimental_s3_rate_limiter", "experimental_gcs_rate_limiter"])
@pytest.mark.parametrize("value", [
    {}, {"read_rate": 100}, {"read_rate": 1.5, "write_rate": 2, "doubling_time": "1s"},
    {"doubling_time": "0s"}, {"doubling_time": "60s"}, {"write_rate": 0.25},
])
def test_rate_limiter_json_is_written_as_tensorstore_does(kind, value):
    theirs = ts.Context.Spec({kind: value}).to_json()[kind]
    assert zarrkit.Context({kind: value}).resource(kind, kind).to_json() == theirs


@pytest.mark.parametrize("value", [{"read_rate": "1"}, {"read_rate": True}, {"x": 1},
                                   {"doubling_time": 5}, {"write_rate": None}, 5])
def test_rate_limiter_json_refused_as_tensorstore_refuses_it(value):
    kind = "experimental_s3_rate_limiter"
    with pytest.raises(ValueError):
        ts.Context.Spec({kind: value})
    with pytest.raises(SpecError, match=kind):
        zarrkit.Context({kind: value})
    with pytest.raises(SpecError, match=kind):
        open_kvstore({"driver": "s3", "bucket": "bkt", "endpoint": "http://127.0.0.1:9",
                      kind: value, "aws_credentials": {"type": "anonymous"}})


@pytest.mark.parametrize("value", [{"read_rate": 0}, {"write_rate": -1}])
def test_a_rate_that_is_not_positive_is_refused_at_open(value):
    """TensorStore accepts the JSON and aborts the process when it makes the limiter."""
    kind = "experimental_s3_rate_limiter"
    assert ts.Context.Spec({kind: value}).to_json()[kind]
    zarrkit.Context({kind: value})
    spec = {"driver": "s3", "bucket": "bkt", "endpoint": "http://127.0.0.1:9", kind: value,
            "aws_credentials": {"type": "anonymous"}}
    with pytest.raises(SpecError, match="requests per second > 0"):
        open_kvstore(spec)
    with pytest.raises(SpecError, match="requests per second > 0"):
        zarrkit.open({"driver": "zarr3", "kvstore": spec, "metadata": MD},
                     assume_metadata=True)


# -- rate limiters: on the wire ----------------------------------------------------------------
def test_s3_reads_wait_for_the_read_rate(fresh, recorder):
    kind, rate, n = "experimental_s3_rate_limiter", 20.0, 10
    store, _ = open_kvstore(_s3(fresh, recorder, **{kind: {"read_rate": rate}}))
    limits = store.location.options.limits
    assert limits.write is None  # writes are not limited
    store.set("k", b"v")
    bucket = limits.read
    assert bucket.scheduled == bucket._start  # (nor counted as reads)
    schedule = []
    for _ in range(n):
        assert bytes(store.get("k")) == b"v"
        schedule.append(bucket.scheduled)
    # Request k may start k/rate seconds after the bucket was made, not before.
    start = bucket._start
    assert all(t >= start + (k + 1) / rate - 1e-9 for k, t in enumerate(schedule))
    assert time.monotonic() - start >= n / rate
    assert [m for m, _, _ in recorder.take()].count("GET") == n


def test_s3_writes_wait_for_the_write_rate(fresh, recorder):
    kind, rate, n = "experimental_s3_rate_limiter", 10.0, 5
    store, _ = open_kvstore(_s3(fresh, recorder, **{kind: {"write_rate": rate}}))
    limits = store.location.options.limits
    assert limits.read is None  # reads are not limited
    bucket = limits.write
    for _ in range(n):
        store.set("w", b"v")
    assert bucket.scheduled >= bucket._start + n / rate - 1e-9
    assert time.monotonic() - bucket._start >= n / rate
    assert [m for m, _, _ in recorder.take()].count("PUT") == n


def test_gcs_reads_wait_for_the_read_rate(fresh, recorder):
    kind, rate, n = "experimental_gcs_rate_limiter", 20.0, 8
    store, _ = open_kvstore(_gcs(fresh, recorder, **{kind: {"read_rate": rate}}))
    store.set("k", b"v")
    bucket = store.location.options.limits.read
    for _ in range(n):
        store.get("k")
    assert bucket.scheduled >= bucket._start + n / rate - 1e-9
    assert time.monotonic() - bucket._start >= n / rate


def test_array_reads_through_a_rate_limiter(fresh, recorder):
    """Every request of an array's reads (concurrent chunk reads too) takes a token."""
    kind, rate = "experimental_s3_rate_limiter", 40.0
    kv = _s3(fresh, recorder, path="r/")
    zarrkit.open({"driver": "zarr3", "kvstore": kv, "metadata": MD, "create": True})[...] = 4
    recorder.take()
    a = zarrkit.open({"driver": "zarr3", "kvstore": {**kv, kind: {"read_rate": rate}}})
    assert a[...].tolist() == [4] * 8
    gets = [m for m, _, _ in recorder.take()].count("GET")
    bucket = _limits(a).read
    assert gets >= 5  # the metadata, then 4 chunks
    assert time.monotonic() - bucket._start >= gets / rate
    assert bucket.scheduled >= bucket._start + gets / rate - 1e-9


def test_stores_without_a_limiter_call_obstore_directly(fresh, recorder):
    import obstore

    store, _ = open_kvstore(_s3(fresh, recorder))
    assert store.location.options.limits is None and store._obs is obstore
    empty, _ = open_kvstore(_s3(fresh, recorder, experimental_s3_rate_limiter={}))
    assert empty._obs is obstore


def test_a_limited_store_pickles_with_limits_of_its_own(fresh, recorder):
    kind = "experimental_s3_rate_limiter"
    store, _ = open_kvstore(_s3(fresh, recorder, **{kind: {"read_rate": 5.0}}))
    copy = pickle.loads(pickle.dumps(store))
    limits = copy.location.options.limits
    assert limits is not store.location.options.limits
    assert limits.json == {"read_rate": 5.0} and limits.read.rate == 5.0


# -- rate limiters: as context resources --------------------------------------------------------
def _limits(array):
    return array.store.location.options.limits


def _assumed(kv, context=None):
    return zarrkit.open({"driver": "zarr3", "kvstore": kv, "metadata": MD},
                        assume_metadata=True, context=context)


ANON = {"driver": "s3", "bucket": "bkt", "endpoint": "http://127.0.0.1:9",
        "aws_credentials": {"type": "anonymous"}}


def test_opens_with_one_context_share_its_rate_limiter():
    kind = "experimental_s3_rate_limiter"
    kv = {**ANON, kind: f"{kind}#a"}
    context = zarrkit.Context({f"{kind}#a": {"read_rate": 3}})
    a, b = _assumed(kv, context), _assumed({**kv, "path": "other/"}, context)
    assert _limits(a) is _limits(b) and _limits(a).read.rate == 3
    c = _assumed(kv, zarrkit.Context({f"{kind}#a": {"read_rate": 3}}))
    assert _limits(c) is not _limits(a)
    inline = _assumed({**ANON, kind: {"read_rate": 3}}, context)
    assert _limits(inline) is not _limits(a)


def test_a_context_without_the_member_limits_nothing():
    """As in TensorStore (measured: its reads are not slowed), the resource applies only to a
    kvstore whose spec names it."""
    kind = "experimental_gcs_rate_limiter"
    kv = {"driver": "gcs", "bucket": "bkt", "storage_options": {"token": "anon"}}
    assert _limits(_assumed(kv, zarrkit.Context({kind: {"read_rate": 1}}))) is None
    named = _assumed({**kv, kind: kind}, zarrkit.Context({kind: {"read_rate": 1}}))
    assert _limits(named).read.rate == 1


@pytest.mark.parametrize("kind,kv", [
    ("experimental_s3_rate_limiter", ANON),
    ("experimental_gcs_rate_limiter", {"driver": "gcs", "bucket": "bkt"}),
])
@pytest.mark.parametrize("member,context", [
    ({"read_rate": 2}, None),
    ({"write_rate": 2, "doubling_time": "90s"}, {"experimental_s3_rate_limiter": {}}),
    ("{kind}#a", {"{kind}#a": {"read_rate": 2}}),
    ("{kind}", {"{kind}": {"read_rate": 2}}),
])
def test_retained_specs_write_the_rate_limiter_as_tensorstore_does(kind, kv, member, context):
    member = member.format(kind=kind) if isinstance(member, str) else member
    context = {k.format(kind=kind): v for k, v in (context or {}).items()}
    spec = {"driver": "zarr3", "kvstore": {**kv, kind: member}, "metadata": MD,
            "context": context}
    theirs = ts.open(spec, assume_metadata=True).result().spec(retain_context=True).to_json()
    anon = {"storage_options": {"token": "anon"}} if kv["driver"] == "gcs" else {}
    ours = zarrkit.open({**spec, "kvstore": {**spec["kvstore"], **anon}},
                        assume_metadata=True).spec(retain_context=True).to_json()
    assert ours["kvstore"].get(kind) == theirs["kvstore"].get(kind)
    named = {k: v for k, v in theirs["context"].items() if k.startswith(kind)}
    assert {k: v for k, v in ours["context"].items() if k.startswith(kind)} == named
    reopened = zarrkit.open({**ours, "kvstore": {**ours["kvstore"], **anon}},
                            assume_metadata=True)
    assert (_limits(reopened) is None) == (kind not in theirs["kvstore"])


# -- the table of driver resources ----------------------------------------------------------------
def _ts_retained(driver, tmp_path):
    spec = {"file": {"driver": "file", "path": str(tmp_path) + "/"},
            "s3": ANON, "gcs": {"driver": "gcs", "bucket": "bkt"},
            "http": {"driver": "http", "base_url": "http://127.0.0.1:9/a"}}[driver]
    return ts.KvStore.open(spec).result().spec(retain_context=True).to_json()


@pytest.mark.parametrize("driver", ["file", "s3", "gcs", "http"])
def test_the_table_names_the_resources_tensorstore_uses(driver, tmp_path):
    """Inline: the resources TensorStore writes resolved in a retained kvstore spec (it also
    writes file_io_sync and aws_credentials there, which zarrkit's stores write themselves);
    concurrency: the one its retained context defines."""
    roles = driver_resources(driver)
    theirs = _ts_retained(driver, tmp_path)
    kinds = zarrkit.spec.context.RESOURCE_KINDS
    inline = {k for k in theirs if k in kinds} - {"file_io_sync", "aws_credentials"}
    assert set(roles.inline) == inline
    assert set(theirs["context"]) - {"data_copy_concurrency"} == {roles.concurrency}
    assert roles.retries in roles.inline
    for alias, same in (("gs", "gcs"), ("https", "http")):
        assert DRIVER_RESOURCES[alias] == DRIVER_RESOURCES[same]
    assert driver_resources("memory") == driver_resources(None) == driver_resources("zip")
