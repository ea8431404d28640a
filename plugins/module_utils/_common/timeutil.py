# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Times as the Kubernetes API writes them, defined once.

``metav1.Time`` is RFC 3339 with second precision (``2026-11-29T14:00:00Z``), ``metav1.MicroTime`` (Lease
renew and acquire times) has microseconds. Datetimes here are naive and in UTC.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
MICROTIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utcnow():
    """Now, UTC, as a naive datetime."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def now_rfc3339():
    """Now, UTC, RFC 3339 with second precision (the format of ``metav1.Time``)."""
    return utcnow().replace(microsecond=0).strftime(TIME_FORMAT)


def microtime(moment):
    """``moment`` (a naive UTC datetime) as ``metav1.MicroTime``."""
    return moment.strftime(MICROTIME_FORMAT)


def millis_from_epoch(seconds):
    """Epoch ``seconds`` as RFC 3339 with milliseconds (``2026-11-29T14:00:00.123Z``)."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse(text):
    """A naive UTC datetime from RFC 3339 (second or fractional precision, ``Z`` or an offset dropped); None when empty or invalid."""
    if not text:
        return None
    text = str(text).replace("Z", "").split("+", 1)[0]
    for fmt in ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def age_seconds(text, now_epoch):
    """Seconds from the RFC 3339 time ``text`` to ``now_epoch`` (epoch seconds); None when ``text`` is not a time."""
    moment = parse(text)
    if moment is None:
        return None
    return now_epoch - moment.replace(tzinfo=datetime.timezone.utc).timestamp()
