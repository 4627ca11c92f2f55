// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

// The design contracts/Sweeper.sol did not take, kept only so test/sweeper/sweeper.test.ts can
// measure it beside the chosen one (docs/charges.md, "Keyless deposit addresses"): each sweep
// creates a contract at the deposit address whose constructor empties the address and
// self-destructs, which since EIP-6780 deletes the account only because it was created in the
// same transaction. Token failures are ignored here: it exists to be measured, not used.
contract EphemeralSweeper {
    /// The call's tokens, read back by each deposit's constructor: they cannot be constructor
    /// arguments, which are part of the init code and so of the address.
    address[] private _tokens;

    function sweep(bytes32[] calldata salts, address[] calldata tokens) external {
        _tokens = tokens;
        for (uint256 i = 0; i < salts.length; ++i) {
            new EphemeralDeposit{salt: keccak256(abi.encode(msg.sender, salts[i]))}();
        }
        delete _tokens;
    }

    /// The destination is the caller of the sweep in progress (tx.origin for this measurement).
    function params() external view returns (address payable destination, address[] memory tokens) {
        return (payable(tx.origin), _tokens);
    }

    function depositAddress(address destination, bytes32 salt) external view returns (address) {
        bytes32 codeHash = keccak256(type(EphemeralDeposit).creationCode);
        bytes32 create2Salt = keccak256(abi.encode(destination, salt));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), create2Salt, codeHash)))));
    }
}

interface IERC20Like {
    function balanceOf(address) external view returns (uint256);
}

contract EphemeralDeposit {
    constructor() {
        (address payable destination, address[] memory tokens) = EphemeralSweeper(msg.sender).params();
        for (uint256 i = 0; i < tokens.length; ++i) {
            uint256 held = IERC20Like(tokens[i]).balanceOf(address(this));
            if (held != 0) {
                (bool ok, ) = tokens[i].call(abi.encodeWithSelector(0xa9059cbb, destination, held));
                ok;
            }
        }
        selfdestruct(destination);
    }
}
