internal import CSQLite

/// Where a queued message waits, which also says what its sequence numbers.
public enum OutboxSource: Sendable, Hashable {
    /// A row of the destination's outbox table, numbered by that table's sequence: messages
    /// that do not carry an event journaled with them (OwnTracks transitions, events a broker
    /// refused, messages queued before schema 5).
    case table
    /// The journal row of the event it carries, numbered by the journal's sequence (the
    /// destination's stream; see ``GatewayStore/outboxStream(_:after:limit:)``).
    case journal
}

/// One destination's stream on the journal: the journal rows marked for it after `settled`,
/// kept in memory as their sequences (runs of consecutive numbers, so a fleet whose events all
/// go to one destination needs one run), for the outbox count and the cap.
struct OutboxStream: Sendable, Equatable {
    /// Every stream message up to this journal sequence is settled: acknowledged, moved to the
    /// outbox table after a refusal, or dropped by the cap.
    private(set) var settled: Int64
    /// The waiting messages' sequences, ascending; those before `head` are gone.
    private var runs: [ClosedRange<Int64>] = []
    private var head = 0
    /// How many messages wait.
    private(set) var count = 0

    init(settled: Int64) { self.settled = settled }

    /// Queues the message of journal row `sequence`, newer than every one queued before.
    mutating func append(_ sequence: Int64) {
        precondition(sequence > max(settled, runs.last?.upperBound ?? 0), "stream sequence \(sequence) out of order")
        if head < runs.count, let last = runs.last, last.upperBound + 1 == sequence {
            runs[runs.count - 1] = last.lowerBound...sequence
        } else {
            runs.append(sequence...sequence)
        }
        count += 1
    }

    /// Settles every message up to journal sequence `sequence` (at most the newest queued, so
    /// that a message queued later can never count as settled); returns how many were waiting.
    @discardableResult
    mutating func settle(through requested: Int64) -> Int {
        let sequence = min(requested, runs.last?.upperBound ?? settled)
        guard sequence > settled else { return 0 }
        settled = sequence
        var removed = 0
        while head < runs.count, runs[head].lowerBound <= sequence {
            let run = runs[head]
            if run.upperBound <= sequence {
                removed += run.count
                head += 1
            } else {
                removed += Int(sequence - run.lowerBound + 1)
                runs[head] = (sequence + 1)...run.upperBound
            }
        }
        count -= removed
        if head > 64, head * 2 > runs.count {
            runs.removeFirst(head)
            head = 0
        }
        return removed
    }

    /// The journal sequence of the `n`-th oldest waiting message (1 is the oldest), if `n` wait.
    func sequence(at n: Int) -> Int64? {
        guard n >= 1, n <= count else { return nil }
        var left = n
        for run in runs[head...] {
            if left <= run.count { return run.lowerBound + Int64(left - 1) }
            left -= run.count
        }
        return nil
    }
}

/// Both destinations' streams.
struct OutboxStreams: Sendable, Equatable {
    var local: OutboxStream
    var remote: OutboxStream

    subscript(destination: OutboxDestination) -> OutboxStream {
        get { destination == .local ? local : remote }
        set {
            if destination == .local { local = newValue } else { remote = newValue }
        }
    }
}
