// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// Keyless deposit addresses and batched payouts for one deployment per network.
///
/// A deposit address is the CREATE2 address of an EIP-1167 clone of `DepositForwarder`, with salt
/// keccak256(abi.encode(destination, salt)): the destination (a wallet's main address) is part of
/// the derivation, so the address can only ever be emptied into that destination. Until its first
/// sweep the address has no code (a plain account any payer can pay); the first sweep deploys the
/// clone there and every later sweep calls it.
///
/// Only the destination itself sweeps its deposits (`msg.sender` is the destination), so nobody
/// else can even name them: a third party can neither move the money nor put code on an address
/// before its payer has paid it.
///
/// Every token call is made with a low-level call whose outcome is checked, never assumed: a
/// token that reverts (paused, blacklisted), returns false or is not a contract fails alone and
/// is reported in an event; one that returns nothing (USDT) succeeds when its balance moved.
contract Sweeper {
    /// Most deposit addresses one `sweep` empties: bounds the call's gas well under a block.
    uint256 public constant SWEEP_BATCH_MAX = 100;
    /// Most items one `pay` pays.
    uint256 public constant PAYOUT_BATCH_MAX = 100;
    /// Gas a native payout's recipient may use: a smart-account wallet receives with a few
    /// thousand, and a recipient that burns gas fails its own item, not the whole batch.
    uint256 public constant PAYOUT_NATIVE_GAS = 100_000;

    /// The implementation every deposit clone delegates to.
    address public immutable FORWARDER;
    /// keccak256 of the 55-byte EIP-1167 creation code of a clone of `FORWARDER`.
    bytes32 public immutable CLONE_CODE_HASH;

    struct Payout {
        address token; // address(0): the native coin, paid from the call's value
        address to;
        uint256 amount;
    }

    /// `token` address(0) is the native coin; `amount` is what left the deposit.
    event Swept(address indexed destination, address indexed deposit, address indexed token, uint256 amount);
    /// `amount` is the balance that could not be moved (0 when the balance could not be read).
    event SweepFailed(address indexed destination, address indexed deposit, address indexed token, uint256 amount);
    /// `index` is the item's position in the `pay` call.
    event Paid(address indexed payer, address indexed token, address indexed to, uint256 index, uint256 amount);
    /// A refused item: its tokens never left the payer; its native amount is refunded to the payer.
    event PayoutFailed(address indexed payer, address indexed token, address indexed to, uint256 index, uint256 amount);

    error BatchTooLarge();
    error Reentered();
    error ValueMismatch();
    error RefundFailed();
    error DeployFailed();

    uint256 private _lock = 1;

    modifier nonReentrant() {
        if (_lock != 1) revert Reentered();
        _lock = 2;
        _;
        _lock = 1;
    }

    constructor() {
        address forwarder = address(new DepositForwarder());
        FORWARDER = forwarder;
        CLONE_CODE_HASH = keccak256(_cloneCode(forwarder));
    }

    /// The deposit address of `salt` (one per charge) bound to `destination`.
    function depositAddress(address destination, bytes32 salt) public view returns (address) {
        bytes32 hash = keccak256(abi.encodePacked(bytes1(0xff), address(this), _create2Salt(destination, salt), CLONE_CODE_HASH));
        return address(uint160(uint256(hash)));
    }

    /// Empties the caller's deposit addresses of `salts` into the caller: each token of `tokens`
    /// (whole balance), then the native coin. A refused token fails alone (`SweepFailed`).
    function sweep(bytes32[] calldata salts, address[] calldata tokens) external nonReentrant {
        if (salts.length > SWEEP_BATCH_MAX) revert BatchTooLarge();
        for (uint256 i = 0; i < salts.length; ++i) {
            address deposit = _deployed(msg.sender, salts[i]);
            for (uint256 j = 0; j < tokens.length; ++j) {
                _pull(deposit, tokens[j]);
            }
            _pull(deposit, address(0));
        }
    }

    /// Pays each item from the caller: tokens by `transferFrom(caller, to, amount)` (the caller
    /// approved this contract), the native coin from the call's value, which must be exactly the
    /// native items' sum. A refused item fails alone (`PayoutFailed`); the native amount of the
    /// refused items goes back to the caller. Nothing stays in this contract.
    function pay(Payout[] calldata items) external payable nonReentrant {
        if (items.length > PAYOUT_BATCH_MAX) revert BatchTooLarge();
        uint256 nativeLeft = msg.value;
        uint256 refund = 0;
        for (uint256 i = 0; i < items.length; ++i) {
            Payout calldata item = items[i];
            bool ok;
            if (item.token == address(0)) {
                if (item.amount > nativeLeft) revert ValueMismatch();
                nativeLeft -= item.amount;
                ok = _payable(item.to) && _sendNative(item.to, item.amount, PAYOUT_NATIVE_GAS);
                if (!ok) refund += item.amount;
            } else {
                ok = _payable(item.to) && _safeTransferFrom(item.token, msg.sender, item.to, item.amount);
            }
            if (ok) emit Paid(msg.sender, item.token, item.to, i, item.amount);
            else emit PayoutFailed(msg.sender, item.token, item.to, i, item.amount);
        }
        if (nativeLeft != 0) revert ValueMismatch();
        if (refund != 0 && !_sendNative(msg.sender, refund, gasleft())) revert RefundFailed();
    }

    /// The deposit address of (`destination`, `salt`), with the clone deployed there if it is not yet.
    function _deployed(address destination, bytes32 salt) private returns (address deposit) {
        deposit = depositAddress(destination, salt);
        if (deposit.code.length != 0) return deposit;
        bytes memory code = _cloneCode(FORWARDER);
        bytes32 create2Salt = _create2Salt(destination, salt);
        address created;
        assembly ("memory-safe") {
            created := create2(0, add(code, 0x20), mload(code), create2Salt)
        }
        // CREATE2 lands exactly on the derived address or fails: a chain where it does not
        // derives addresses otherwise, and no deposit could be swept there.
        if (created != deposit) revert DeployFailed();
    }

    /// Moves `token`'s whole balance (native when address(0)) from `deposit` to its destination
    /// (the caller) and reports it. A deposit that holds none of it emits nothing.
    function _pull(address deposit, address token) private {
        (bool ok, uint256 amount) = (false, 0);
        try DepositForwarder(payable(deposit)).pull(token, payable(msg.sender)) returns (bool pulled, uint256 moved) {
            (ok, amount) = (pulled, moved);
        } catch {
            // The clone's own code never reverts for a token's sake; out of gas in it lands here.
        }
        if (ok && amount == 0) return;
        if (ok) emit Swept(msg.sender, deposit, token, amount);
        else emit SweepFailed(msg.sender, deposit, token, amount);
    }

    /// A payout to no one, or to this contract (which would keep it), is refused.
    function _payable(address to) private view returns (bool) {
        return to != address(0) && to != address(this);
    }

    function _create2Salt(address destination, bytes32 salt) private pure returns (bytes32) {
        return keccak256(abi.encode(destination, salt));
    }

    /// EIP-1167 creation code: 10 bytes that return the 45-byte runtime, which delegates every
    /// call to `implementation`.
    function _cloneCode(address implementation) private pure returns (bytes memory) {
        return abi.encodePacked(hex"3d602d80600a3d3981f3363d3d373d3d3d363d73", implementation, hex"5af43d82803e903d91602b57fd5bf3");
    }
}

/// The code every deposit clone runs (by DELEGATECALL, so in the deposit address's own account).
/// Only the Sweeper may call it, and the Sweeper only ever calls a deposit with the destination it
/// derived that deposit's address from.
contract DepositForwarder {
    /// The Sweeper that deployed this implementation (an immutable: in the code, so the clones see it).
    address public immutable SWEEPER;

    error NotSweeper();

    constructor() {
        SWEEPER = msg.sender;
    }

    /// Payments arriving after the first sweep (the clone forwards them here with no calldata).
    receive() external payable {}

    /// Sends this account's whole balance of `token` (native when address(0)) to `destination`.
    /// `ok` false: refused (`amount` is the balance that stayed); ok with `amount` 0: none held.
    /// Never reverts for a token's sake, so one refusal leaves the Sweeper's other moves standing.
    function pull(address token, address payable destination) external returns (bool ok, uint256 amount) {
        if (msg.sender != SWEEPER) revert NotSweeper();
        if (token == address(0)) {
            amount = address(this).balance;
            if (amount == 0) return (true, 0);
            assembly ("memory-safe") {
                ok := call(gas(), destination, amount, 0, 0, 0, 0)
            }
            return (ok, amount);
        }
        (bool read, uint256 before) = _balanceOf(token);
        if (!read) return (false, 0);
        if (before == 0) return (true, 0);
        if (!_safeTransfer(token, destination, before)) return (false, before);
        (bool readAfter, uint256 left) = _balanceOf(token);
        // What left the account is the amount moved; a "successful" transfer that moved nothing
        // (or a balance that no longer reads) is a refusal.
        if (!readAfter || left >= before) return (false, before);
        return (true, before - left);
    }

    function _balanceOf(address token) private view returns (bool ok, uint256 held) {
        bytes memory data = abi.encodeWithSelector(0x70a08231, address(this));
        assembly ("memory-safe") {
            ok := staticcall(gas(), token, add(data, 0x20), mload(data), 0, 0x20)
            ok := and(ok, gt(returndatasize(), 0x1f))
            held := mload(0)
        }
    }

    function _safeTransfer(address token, address to, uint256 amount) private returns (bool) {
        return _callToken(token, abi.encodeWithSelector(0xa9059cbb, to, amount));
    }
}

/// Calls an ERC-20 the way USDT-like tokens need: success is a call that did not revert and either
/// returned true or returned nothing from an address that has code. At most 32 bytes of the answer
/// are read, so an answer of any size costs the caller nothing to copy.
function _callToken(address token, bytes memory data) returns (bool ok) {
    assembly ("memory-safe") {
        mstore(0, 0)
        ok := call(gas(), token, 0, add(data, 0x20), mload(data), 0, 0x20)
        switch returndatasize()
        case 0 {
            ok := and(ok, gt(extcodesize(token), 0))
        }
        default {
            ok := and(ok, and(gt(returndatasize(), 0x1f), eq(mload(0), 1)))
        }
    }
}

function _safeTransferFrom(address token, address from, address to, uint256 amount) returns (bool) {
    return _callToken(token, abi.encodeWithSelector(0x23b872dd, from, to, amount));
}

/// Sends native coin with at most `gasLimit` gas, copying none of the recipient's answer.
function _sendNative(address to, uint256 amount, uint256 gasLimit) returns (bool ok) {
    assembly ("memory-safe") {
        ok := call(gasLimit, to, amount, 0, 0, 0, 0)
    }
}
