/// A first-in first-out queue in one array: elements before `head` are taken, and the array
/// is compacted once more than half of it (and over 1,024 elements) is taken, or emptied when
/// the last element is taken. The queue of ``BoundedQueue`` and of ``StatePublisher``'s due
/// topics; no lock of its own (its owner's lock or thread guards it).
struct ArrayQueue<Element> {
    private var elements: [Element] = []
    private var head = 0

    init() {}

    var count: Int { elements.count - head }
    var isEmpty: Bool { head == elements.count }

    /// The elements still queued, oldest first.
    var queued: ArraySlice<Element> { elements[head...] }

    mutating func append(_ element: Element) { elements.append(element) }

    /// Takes the oldest element.
    mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        let element = elements[head]
        head += 1
        if head == elements.count {
            elements.removeAll(keepingCapacity: elements.count <= 1024)
            head = 0
        } else if head >= 1024, head * 2 >= elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Takes every element.
    mutating func removeAll() {
        elements.removeAll()
        head = 0
    }
}
