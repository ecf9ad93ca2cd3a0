import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Answers a request whose head cannot be read (headers past the decoder's limits, a malformed request line) with
/// a JSON error that says what was wrong, instead of the empty 400 the HTTP layer writes on its own (rule V4: limits
/// give a 4xx with a message). Errors met inside a request's body reach the handlers, which answer them.
final class ParseErrorAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// A request's head has been read and its answer has not ended.
    private var inRequest = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { inRequest = true }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { inRequest = false }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parseError = error as? HTTPParserError, !inRequest else { return context.fireErrorCaught(error) }
        let failure: HTTPFailure
        switch parseError {
        case .headerOverflow:
            failure = HTTPFailure(
                .requestHeaderFieldsTooLarge, reason: "invalid",
                "The request's headers are larger than this server reads (80 KiB in all, 1,000 fields); nothing was done."
            )
        default:
            failure = HTTPFailure.badRequest(
                "The request could not be read as HTTP/1.1 (\(parseError)); nothing was done.")
        }
        let body = context.channel.allocator.buffer(string: failure.body(firebase: false).serialized)
        let head = HTTPResponse(
            status: failure.status,
            headerFields: [
                .contentType: "application/json; charset=UTF-8", .contentLength: String(body.readableBytes),
                .connection: "close",
            ])
        inRequest = true  // one answer: what follows on this connection is not read
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        // The context belongs to its event loop, where the write's completion runs too.
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
}
