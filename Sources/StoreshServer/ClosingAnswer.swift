import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes the connection once an answer that says `Connection: close` has been written: the HTTP layer closes
/// only when a request asks, and a refusal that frees a connection (an event stream past its limit) must not keep
/// holding one (rule V8: ordinary requests are always served).
final class ClosingAnswer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var closing = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.headerFields[.connection]?.lowercased() == "close" { closing = true }
            context.write(data, promise: promise)
        case .end where closing:
            closing = false
            let written = promise ?? context.eventLoop.makePromise()
            // The context belongs to its event loop, where the write's completion runs too.
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.futureResult.whenComplete { _ in bound.value.close(promise: nil) }
            context.write(data, promise: written)
        default:
            context.write(data, promise: promise)
        }
    }
}
